//! Words per second of the word count's two halves: a source subtask's source + route +
//! encode into 32 KiB buffers, and a count subtask's decode + count.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use conflux_operators::record::{encode, encoded_len};
use conflux_operators::{
    EncodeError, KeyedWriter, RoutedVocabulary, Vocabulary, WordCounter, WordSource, Zipf,
};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

const WORDS: u64 = 1_000_000;
const BUFFER: usize = 32 * 1024;

/// A full buffer handed on: counted, as a sink that keeps nothing.
type Full<'a> = dyn FnMut(u32, &[u8]) -> Result<(), EncodeError> + 'a;

/// One source subtask's output into 64 buffers of 32 KiB: `emit` writes every word through the
/// writer and the full-buffer callback; the bytes handed on, the last buffers flushed.
fn produce_with(emit: impl FnOnce(&mut KeyedWriter, &mut Full<'_>)) -> usize {
    let mut w = KeyedWriter::new(64, BUFFER);
    let mut bytes = 0usize;
    {
        let mut full = |_: u32, buf: &[u8]| -> Result<(), EncodeError> {
            bytes += buf.len();
            Ok(())
        };
        emit(&mut w, &mut full);
        w.flush(&mut full).expect("flushes");
    }
    bytes
}

fn produce(c: &mut Criterion) {
    let vocabulary = Vocabulary::new(1, 100_000).expect("valid");
    let zipf = Zipf::new(vocabulary.len()).expect("valid");
    let routes = vocabulary.routes(64, 128).expect("valid");
    let mut g = c.benchmark_group("wordcount");
    g.throughput(Throughput::Elements(WORDS));
    // The word's route and its record from separate arrays, encoded per word...
    g.bench_function("source_route_encode", |b| {
        b.iter(|| {
            black_box(produce_with(|w, full| {
                for id in WordSource::new(&zipf, 1, 0, WORDS) {
                    w.write(routes[id as usize], vocabulary.word(id), full)
                        .expect("fits");
                }
            }))
        })
    });
    // ... encoded once, beside its route ...
    let routed = RoutedVocabulary::new(&vocabulary, 64, 128).expect("valid");
    g.bench_function("source_routed_records", |b| {
        b.iter(|| {
            black_box(produce_with(|w, full| {
                for id in WordSource::new(&zipf, 1, 0, WORDS) {
                    let (sub, record) = routed.record(id);
                    w.write_record(sub, record, full).expect("fits");
                }
            }))
        })
    });
    // ... drawn 256 at a time, so that the alias table reads overlap (what the TaskManager's
    // source does).
    g.bench_function("source_routed_batched", |b| {
        b.iter(|| {
            black_box(produce_with(|w, full| {
                let mut words = WordSource::new(&zipf, 1, 0, WORDS);
                let mut batch = [0u32; 256];
                loop {
                    let n = words.fill(&mut batch);
                    if n == 0 {
                        break;
                    }
                    for &id in &batch[..n] {
                        let (sub, record) = routed.record(id);
                        w.write_record(sub, record, full).expect("fits");
                    }
                }
            }))
        })
    });
    // The buffers one count subtask receives: 1 M words' records in 32 KiB buffers.
    let mut buffers = Vec::new();
    let mut buf = vec![0u8; BUFFER];
    let mut len = 0;
    for id in WordSource::new(&zipf, 1, 1, WORDS) {
        let word = vocabulary.word(id);
        if encoded_len(word) > BUFFER - len {
            buffers.push(buf[..len].to_vec());
            len = 0;
        }
        len += encode(word, &mut buf[len..]).expect("fits");
    }
    buffers.push(buf[..len].to_vec());
    g.bench_function("decode_count", |b| {
        b.iter(|| {
            let mut counter = WordCounter::new();
            for buf in &buffers {
                counter.add_records(buf).expect("valid");
            }
            black_box(counter.total())
        })
    });
    g.finish();
}

criterion_group!(benches, produce);
criterion_main!(benches);
