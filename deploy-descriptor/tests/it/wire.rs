//! The versioned wire format: round trips, and every kind of corruption named.

use conflux_deploy::wire::{decode, encode, PayloadKind, WireError, HEADER_LEN};
use conflux_deploy::{JobInformation, ShuffleDescriptorGroup};
use proptest::prelude::*;

fn sample() -> JobInformation {
    JobInformation {
        job_id: conflux_blob_api::JobId([3; 16]),
        job_name: "word count".to_owned(),
        job_type: "batch".to_owned(),
    }
}

#[test]
fn round_trip() {
    let (bytes, size) = encode(PayloadKind::JobInformation, &sample()).expect("encode");
    assert_eq!(size.compressed, bytes.len());
    assert_eq!(&bytes[..4], b"CFXD");
    let back: JobInformation = decode(PayloadKind::JobInformation, &bytes).expect("decode");
    assert_eq!(back, sample());
}

#[test]
fn corruption_is_named() {
    let (good, _) = encode(PayloadKind::JobInformation, &sample()).expect("encode");
    let mutate = |at: usize, value: u8| {
        let mut b = good.clone();
        b[at] = value;
        decode::<JobInformation>(PayloadKind::JobInformation, &b).expect_err("corrupt")
    };
    assert!(matches!(mutate(0, b'X'), WireError::BadMagic { .. }));
    assert!(matches!(
        mutate(4, 9),
        WireError::UnsupportedVersion { found: 9 }
    ));
    assert!(matches!(
        mutate(6, 1),
        WireError::WrongKind {
            found: 1,
            expected: 2
        }
    ));
    assert!(matches!(mutate(7, 0), WireError::UnknownCodec(0)));
    assert!(matches!(mutate(11, 0xff), WireError::PayloadTooLarge(_)));
    assert!(matches!(
        mutate(HEADER_LEN + 1, good[HEADER_LEN + 1] ^ 1),
        WireError::Checksum { .. }
    ));
    assert!(matches!(
        decode::<JobInformation>(PayloadKind::JobInformation, &good[..10]),
        Err(WireError::TooShort { len: 10 })
    ));
    // A job information read as a descriptor group: the kind byte says no.
    assert!(matches!(
        decode::<ShuffleDescriptorGroup>(PayloadKind::ShuffleDescriptorGroup, &good),
        Err(WireError::WrongKind { .. })
    ));
    let message = mutate(0, b'X').to_string();
    assert!(message.contains("not Conflux descriptor data"), "{message}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Random bytes, or a valid frame with random damage, never panic the reader.
    #[test]
    fn damaged_frames_never_panic(noise in proptest::collection::vec(any::<u8>(), 0..64), at in 0usize..64, flip in 1u8..) {
        let _ = decode::<ShuffleDescriptorGroup>(PayloadKind::ShuffleDescriptorGroup, &noise);
        let (mut bytes, _) = encode(PayloadKind::JobInformation, &sample()).expect("encode");
        let at = at % bytes.len();
        bytes[at] ^= flip;
        prop_assert!(decode::<JobInformation>(PayloadKind::JobInformation, &bytes).is_err());
    }
}
