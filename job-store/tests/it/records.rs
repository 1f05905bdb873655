//! Records: every truncation and every flipped byte is detected, naming the offset.

use conflux_job_store::record::{read_records, write_record};
use conflux_job_store::RecordError;

const MAGIC: &[u8; 8] = b"TESTMAG1";

fn file(payloads: &[&[u8]]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for p in payloads {
        write_record(&mut out, p).expect("record");
    }
    out
}

#[test]
fn records_read_back_with_their_offsets() {
    let bytes = file(&[b"abc", b"", b"hello"]);
    let records = read_records(&bytes, MAGIC, "test").expect("read");
    let got: Vec<(u64, &[u8])> = records;
    assert_eq!(
        got,
        vec![(8, &b"abc"[..]), (19, &b""[..]), (27, &b"hello"[..])]
    );
}

#[test]
fn every_truncation_is_detected() {
    let bytes = file(&[b"abc", b"hello"]);
    // Cutting inside the second record (offset 19, 13 bytes) is a truncated record at 19.
    for cut in 20..bytes.len() {
        match read_records(&bytes[..cut], MAGIC, "test") {
            Err(RecordError::Truncated { offset, .. }) => assert_eq!(offset, 19, "cut {cut}"),
            other => panic!("cut {cut}: {other:?}"),
        }
    }
    // A cut at a record boundary is a shorter, valid file.
    assert_eq!(
        read_records(&bytes[..19], MAGIC, "test")
            .expect("whole")
            .len(),
        1
    );
    assert!(matches!(
        read_records(&bytes[..5], MAGIC, "test"),
        Err(RecordError::BadMagic { expected: "test" })
    ));
}

#[test]
fn every_flipped_payload_byte_fails_its_checksum() {
    let bytes = file(&[b"abc", b"hello"]);
    for at in (19 + 8)..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x40;
        assert_eq!(
            read_records(&bad, MAGIC, "test"),
            Err(RecordError::Checksum { offset: 19 }),
            "byte {at}"
        );
    }
}

#[test]
fn a_huge_length_is_refused_before_allocating() {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(&[0; 4]);
    assert!(matches!(
        read_records(&bytes, MAGIC, "test"),
        Err(RecordError::TooLong { offset: 8, .. })
    ));
}
