//! The word count's tasks on the TaskManager: a source that generates its seeded words, routes
//! each to its consumer subtask and writes one record per word into its result partition (a
//! file when BLOCKING, bounded queues when PIPELINED); and a count task that reads every input
//! channel its TDD names through the producers' data servers, counts, and writes its sink
//! file. The computing runs on the blocking pool; the network on tokio.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use conflux_deploy::{
    ExecutionAttemptId, LoadedInputGate, ShuffleDescriptor, TaskDeploymentDescriptor,
};
use conflux_operators::{
    write_counts, KeyedWriter, RoutedVocabulary, Vocabulary, WordCountConfig, WordCounter,
    WordSource, Zipf,
};
use tokio::sync::mpsc;

use crate::metrics::TaskIo;
use crate::protocol::{PartitionRef, TaskMetrics, WordCountRole, WordCountTask, MAX_CREDIT};
use crate::secret::Secret;
use crate::shuffle::input::{attempts_for, spawn_readers, InputChannel, InputEvent, InputSettings};
use crate::shuffle::partition_file::{PartitionFileError, PartitionFileWriter, MAX_BUFFER_BYTES};
use crate::shuffle::partitions::{PipelinedItem, PipelinedPartition, ResultPartitionManager};
use crate::taskmanager::commit_lease::CommitLease;

/// Why a word count task failed.
#[derive(Debug)]
pub(crate) struct TaskFailure {
    pub(crate) reason: String,
    pub(crate) partition_not_found: Option<PartitionRef>,
    /// Every attempt would fail the same way (see [`recurs`]).
    pub(crate) non_recoverable: bool,
}

impl TaskFailure {
    fn new(reason: impl std::fmt::Display) -> TaskFailure {
        TaskFailure {
            reason: reason.to_string(),
            partition_not_found: None,
            non_recoverable: false,
        }
    }

    /// A failure of the output directory or the partition files: non-recoverable when the
    /// file system's answer would be the same on every attempt.
    fn storage(reason: impl std::fmt::Display, recurs: bool) -> TaskFailure {
        TaskFailure {
            non_recoverable: recurs,
            ..TaskFailure::new(reason)
        }
    }

    fn partition_file(e: PartitionFileError) -> TaskFailure {
        let recurs = match &e {
            PartitionFileError::Quota { alone, .. } => *alone,
            _ => false,
        };
        TaskFailure::storage(e, recurs)
    }
}

/// Whether a file-system error writing the output directory would recur on every attempt: no
/// permission, a read-only file system, a full disk or quota, a path through a file, a file
/// too large. Anything else (an interrupted or timed-out operation, a directory removed
/// meanwhile) may pass on a retry.
fn recurs(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::PermissionDenied
            | ErrorKind::ReadOnlyFilesystem
            | ErrorKind::StorageFull
            | ErrorKind::NotADirectory
            | ErrorKind::FileTooLarge
    ) || e.raw_os_error() == Some(rustix::io::Errno::DQUOT.raw_os_error())
}

/// Whether a sink error would recur on every attempt ([`recurs`] for its file system error).
fn sink_recurs(e: &conflux_operators::SinkError) -> bool {
    matches!(e, conflux_operators::SinkError::Io { source, .. } if recurs(source))
}

impl From<conflux_operators::EncodeError> for TaskFailure {
    fn from(e: conflux_operators::EncodeError) -> TaskFailure {
        TaskFailure::new(e)
    }
}

/// Routed records depend on the vocabulary (seed, size), the consumers' parallelism and max
/// parallelism.
type RoutedKey = (u64, u32, u32, u32);

/// What word count tasks of one TaskManager share: vocabularies, Zipf tables and routed
/// records are built once per TaskManager, not per task.
#[derive(Default)]
pub(crate) struct WordCountShared {
    vocabularies: Mutex<HashMap<(u64, u32), Arc<Vocabulary>>>,
    zipfs: Mutex<HashMap<u32, Arc<Zipf>>>,
    routed: Mutex<HashMap<RoutedKey, Arc<RoutedVocabulary>>>,
}

fn cached<K: std::hash::Hash + Eq, V>(
    map: &Mutex<HashMap<K, Arc<V>>>,
    key: K,
    make: impl FnOnce() -> Result<V, conflux_operators::OperatorError>,
) -> Result<Arc<V>, TaskFailure> {
    let mut map = map
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(v) = map.get(&key) {
        return Ok(Arc::clone(v));
    }
    let v = Arc::new(make().map_err(TaskFailure::new)?);
    map.insert(key, Arc::clone(&v));
    Ok(v)
}

/// Sets the task's cancel flag when dropped: an aborted task's blocking half stops at its next
/// check.
pub(crate) struct CancelOnDrop(pub(crate) Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn cancelled(flag: &AtomicBool) -> Result<(), TaskFailure> {
    if flag.load(Ordering::Relaxed) {
        Err(TaskFailure::new("cancelled"))
    } else {
        Ok(())
    }
}

/// What a running word count task needs of its TaskManager.
pub(crate) struct WordCountContext {
    pub(crate) shared: Arc<WordCountShared>,
    pub(crate) partitions: Arc<ResultPartitionManager>,
    pub(crate) token: Option<String>,
    /// How long a consumer waits for a producer's data server to welcome it, per attempt.
    pub(crate) welcome_timeout: Duration,
    /// The partition request back-off: the first wait and the longest.
    pub(crate) backoff: (Duration, Duration),
    /// The session's commit lease: a sink publishes its file only while it holds.
    pub(crate) lease: Arc<CommitLease>,
}

/// Runs the task to its end; its metrics or why it failed.
pub(crate) async fn run(
    ctx: &WordCountContext,
    tdd: Arc<TaskDeploymentDescriptor>,
    gates: Vec<LoadedInputGate>,
    task: WordCountTask,
    job_secret: Secret,
    io: TaskIo,
    retries: Arc<AtomicU64>,
) -> Result<TaskMetrics, TaskFailure> {
    let cancel = Arc::new(AtomicBool::new(false));
    let _guard = CancelOnDrop(Arc::clone(&cancel));
    match task.role {
        WordCountRole::Source {
            consumer_max_parallelism,
        } => {
            let shared = Arc::clone(&ctx.shared);
            let partitions = Arc::clone(&ctx.partitions);
            let runtime = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || {
                run_source(
                    &shared,
                    &partitions,
                    &tdd,
                    &task,
                    consumer_max_parallelism,
                    &cancel,
                    &runtime,
                    &io,
                )
            })
            .await
            .map_err(|e| TaskFailure::new(format!("source thread: {e}")))?
        }
        WordCountRole::Count => {
            let mut channels = Vec::new();
            for (descriptor_gate, loaded) in tdd.input_gates.iter().zip(&gates) {
                let range = descriptor_gate.consumed_subpartitions.clone();
                let pipelined = !descriptor_gate
                    .partition_type
                    .is_blocking_or_blocking_persistent();
                // Fewer channels than the group's where a skewed subpartition is split.
                let read = descriptor_gate.consumed_channels.clone();
                let skip = read.start as usize;
                let take = read.len();
                for d in loaded.descriptors().skip(skip).take(take) {
                    match *d {
                        ShuffleDescriptor::Known {
                            partition,
                            producer_location,
                            ..
                        } => channels.push(InputChannel {
                            partition,
                            address: producer_location.data_address,
                            subpartitions: (*range.start(), *range.end()),
                            pipelined,
                        }),
                        ShuffleDescriptor::Unknown { partition } => {
                            return Err(TaskFailure::new(format!(
                                "partition {} of result {}: producer location unknown \
                                 (partition updates are not supported)",
                                partition.partition, partition.result
                            )))
                        }
                    }
                }
            }
            let settings = Arc::new(InputSettings {
                job: tdd.job_id,
                secret: job_secret,
                token: ctx.token.clone(),
                credit: task.credit.clamp(1, MAX_CREDIT),
                attempts: attempts_for(ctx.backoff.0, ctx.backoff.1),
                backoff: ctx.backoff.0,
                max_backoff: ctx.backoff.1,
                retries,
                welcome_timeout: ctx.welcome_timeout,
            });
            let n = channels.len();
            let capacity = (n * task.credit.clamp(1, MAX_CREDIT) as usize).clamp(1, 1 << 16);
            let (events_tx, events) = mpsc::channel(capacity);
            // Aborted with this future (a cancelled task).
            let _readers = spawn_readers(channels, settings, events_tx);
            let attempt = tdd.execution_attempt;
            let lease = Arc::clone(&ctx.lease);
            tokio::task::spawn_blocking(move || {
                run_count(events, n, &task, attempt, &cancel, &io, &lease)
            })
            .await
            .map_err(|e| TaskFailure::new(format!("count thread: {e}")))?
        }
    }
}

/// Words a source draws at a time (see [`WordSource::fill`]); the cancel flag is looked at
/// every 256 batches.
const SOURCE_BATCH: usize = 256;

/// Hands each word of `words` to `write` as its consumer subtask and record, checking the
/// cancel flag every 65,536 words and counting the records into `records_out` per batch.
fn emit(
    mut words: WordSource<'_>,
    routed: &RoutedVocabulary,
    cancel: &AtomicBool,
    records_out: &prometheus_client::metrics::gauge::Gauge,
    mut write: impl FnMut(u32, &[u8]) -> Result<(), TaskFailure>,
) -> Result<(), TaskFailure> {
    let mut batch = [0u32; SOURCE_BATCH];
    for n in 0usize.. {
        if n % 256 == 0 {
            cancelled(cancel)?;
        }
        let drawn = words.fill(&mut batch);
        if drawn == 0 {
            return Ok(());
        }
        for &id in &batch[..drawn] {
            let (sub, record) = routed.record(id);
            write(sub, record)?;
        }
        TaskIo::add(records_out, drawn as u64);
    }
    Ok(())
}

/// Writes a source subtask's words into its partition (a file for a blocking one, the
/// pipelined subpartitions otherwise), counting records and bytes into `io`.
#[allow(clippy::too_many_arguments)] // the task's context, each borrowed by the blocking thread
fn run_source(
    shared: &WordCountShared,
    partitions: &ResultPartitionManager,
    tdd: &TaskDeploymentDescriptor,
    task: &WordCountTask,
    consumer_max_parallelism: u32,
    cancel: &AtomicBool,
    runtime: &tokio::runtime::Handle,
    io: &TaskIo,
) -> Result<TaskMetrics, TaskFailure> {
    let config =
        WordCountConfig::from_config(task.config.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(TaskFailure::new)?;
    let [produced] = tdd.produced_partitions.as_slice() else {
        return Err(TaskFailure::new(format!(
            "a word count source produces one partition, this one {}",
            tdd.produced_partitions.len()
        )));
    };
    let subpartitions = produced.number_of_subpartitions;
    let vocabulary = cached(
        &shared.vocabularies,
        (config.seed, config.vocabulary),
        || Vocabulary::new(config.seed, config.vocabulary),
    )?;
    let zipf = cached(&shared.zipfs, config.vocabulary, || {
        Zipf::new(config.vocabulary)
    })?;
    let routed = cached(
        &shared.routed,
        (
            config.seed,
            config.vocabulary,
            subpartitions,
            consumer_max_parallelism,
        ),
        || RoutedVocabulary::new(&vocabulary, subpartitions, consumer_max_parallelism),
    )?;
    let subtask = produced.partition.partition;
    let job = tdd.job_id;
    let id = produced.partition;
    let words = WordSource::new(&zipf, config.seed, subtask, config.words_per_source);
    let mut writer = KeyedWriter::new(subpartitions, MAX_BUFFER_BYTES);
    let mut peak_buffered = 0;
    // Counted per buffer written, not per record: free on the hot path.
    let mut written = vec![
        0u64;
        if task.report_produced_bytes {
            subpartitions as usize
        } else {
            0
        }
    ];
    let mut count = |s: u32, buf: &[u8]| {
        TaskIo::add(&io.bytes_out, buf.len() as u64);
        if let Some(b) = written.get_mut(s as usize) {
            *b += buf.len() as u64;
        }
    };
    if produced.partition_type.is_blocking_or_blocking_persistent() {
        let path = partitions
            .blocking_path(job, id)
            .map_err(|e| TaskFailure::new(format!("partition directory: {e}")))?;
        let mut file = PartitionFileWriter::create(
            path.clone(),
            subpartitions,
            Arc::clone(partitions.quota()),
        )
        .map_err(TaskFailure::partition_file)?;
        let mut append = |s: u32, buf: &[u8]| {
            count(s, buf);
            file.append(s, buf).map_err(TaskFailure::partition_file)
        };
        emit(words, &routed, cancel, &io.records_out, |sub, record| {
            writer.write_record(sub, record, &mut append)
        })?;
        writer.flush(&mut append)?;
        let size = file.finish().map_err(TaskFailure::partition_file)?;
        partitions
            .register_blocking(job, id, path, size)
            .map_err(TaskFailure::new)?;
    } else {
        let (partition, senders) =
            PipelinedPartition::new(subpartitions, task.credit.clamp(1, MAX_CREDIT) as usize);
        partitions.register_pipelined(job, id, Arc::clone(&partition));
        let send = |s: u32, item: PipelinedItem| -> Result<(), TaskFailure> {
            let tx = &senders[s as usize];
            let gone = || TaskFailure::new(format!("subpartition {s}: its consumer is gone"));
            // Counted once it has room: the queue's bound is the credit.
            let queued = |item: &PipelinedItem| {
                if let PipelinedItem::Buffer(data) = item {
                    partition.queued(data.len() as u64);
                }
            };
            // Room now: no waiting, no timer (the common case while consumers keep up).
            let item = match tx.try_reserve() {
                Ok(permit) => {
                    queued(&item);
                    permit.send(item);
                    return Ok(());
                }
                Err(mpsc::error::TrySendError::Closed(())) => return Err(gone()),
                Err(mpsc::error::TrySendError::Full(())) => item,
            };
            // Waits for room (back-pressure) in slices, so a cancelled task stops.
            loop {
                cancelled(cancel)?;
                let permit = runtime.block_on(async {
                    tokio::time::timeout(Duration::from_millis(50), tx.reserve()).await
                });
                match permit {
                    Ok(Ok(permit)) => {
                        queued(&item);
                        permit.send(item);
                        return Ok(());
                    }
                    Ok(Err(_)) => return Err(gone()),
                    // No room within the slice: look at the cancel flag, then wait again.
                    Err(_) => {}
                }
            }
        };
        let mut full = |s: u32, buf: &[u8]| -> Result<(), TaskFailure> {
            count(s, buf);
            send(s, PipelinedItem::Buffer(Bytes::copy_from_slice(buf)))
        };
        emit(words, &routed, cancel, &io.records_out, |sub, record| {
            writer.write_record(sub, record, &mut full)
        })?;
        writer.flush(&mut full)?;
        for s in 0..subpartitions {
            send(s, PipelinedItem::End)?;
        }
        peak_buffered = partition.peak_buffered();
    }
    Ok(TaskMetrics {
        records_out: writer.records(),
        bytes_out: writer.bytes(),
        records_in: 0,
        bytes_in: 0,
        peak_buffered_bytes: peak_buffered,
        produced_bytes: if task.report_produced_bytes {
            vec![written]
        } else {
            Vec::new()
        },
        partition_request_retries: 0,
    })
}

/// Writes a sink's file into `dir`: first into a directory of the attempt's own, then renamed
/// into place, so that two attempts of one subtask (a speculative attempt beside its original)
/// never write the same file at once; a cancelled attempt (the one that lost) publishes
/// nothing. Both attempts count the same input, so whichever renames last replaces the file
/// with the same content.
fn publish_counts(
    dir: &std::path::Path,
    subtask: u32,
    attempt: ExecutionAttemptId,
    counts: &[(&str, u64)],
    cancel: &AtomicBool,
    lease: &CommitLease,
) -> Result<(), TaskFailure> {
    let own = dir.join(format!(".attempt-{}-{}", attempt.vertex, attempt.attempt));
    std::fs::create_dir_all(&own).map_err(|e| {
        TaskFailure::storage(
            format!("output directory {}: {e}", own.display()),
            recurs(&e),
        )
    })?;
    let written = write_counts(&own, subtask, counts).map_err(|e| {
        let recurs = sink_recurs(&e);
        TaskFailure::storage(e, recurs)
    });
    let published = written.and_then(|(path, _)| {
        cancelled(cancel)?;
        // Fenced: past the lease the JobManager may already have declared this TaskManager
        // lost and deployed another attempt, whose file this one must not replace.
        lease.check().map_err(TaskFailure::new)?;
        let target = dir.join(path.file_name().unwrap_or_default());
        std::fs::rename(&path, &target).map_err(|e| {
            TaskFailure::storage(
                format!("moving {} to {}: {e}", path.display(), target.display()),
                recurs(&e),
            )
        })
    });
    // Left behind only when the process dies here; the next attempt's name differs.
    let _ = std::fs::remove_dir_all(&own);
    published
}

fn run_count(
    mut events: mpsc::Receiver<InputEvent>,
    channels: usize,
    task: &WordCountTask,
    attempt: ExecutionAttemptId,
    cancel: &AtomicBool,
    io: &TaskIo,
    lease: &CommitLease,
) -> Result<TaskMetrics, TaskFailure> {
    let mut counter = WordCounter::new();
    let mut bytes_in = 0u64;
    let mut ended = 0;
    let delay = Duration::from_micros(task.sink_delay_us);
    while ended < channels {
        cancelled(cancel)?;
        match events.blocking_recv() {
            Some(InputEvent::Buffer { data, credit }) => {
                let before = counter.total();
                counter
                    .add_records(&data)
                    .map_err(|e| TaskFailure::new(format!("input buffer: {e}")))?;
                bytes_in += data.len() as u64;
                TaskIo::add(&io.bytes_in, data.len() as u64);
                TaskIo::add(&io.records_in, counter.total() - before);
                if !delay.is_zero() {
                    std::thread::sleep(delay);
                }
                credit.give_back();
            }
            Some(InputEvent::ChannelEnded) => ended += 1,
            Some(InputEvent::Failed { partition, reason }) => {
                return Err(TaskFailure {
                    reason: format!(
                        "partition {} of result {} not found: {reason}",
                        partition.partition, partition.result
                    ),
                    partition_not_found: Some(PartitionRef {
                        result: partition.result,
                        partition: partition.partition,
                    }),
                    non_recoverable: false,
                });
            }
            None => return Err(TaskFailure::new("the input readers stopped")),
        }
    }
    if let Some(dir) = &task.output_dir {
        publish_counts(dir, task.subtask, attempt, &counter.sorted(), cancel, lease)?;
    }
    Ok(TaskMetrics {
        records_out: 0,
        bytes_out: 0,
        records_in: counter.total(),
        bytes_in,
        peak_buffered_bytes: 0,
        produced_bytes: Vec::new(),
        partition_request_retries: 0,
    })
}
