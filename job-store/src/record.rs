//! Records: `[length: u32 LE][CRC-32 of the payload: u32 LE][payload]`, one after the other
//! behind an 8-byte file magic. A reader checks the magic, that every record is whole (a
//! length running past the end is a torn write) and every checksum; the error names the byte
//! offset of the bad record.

/// Bytes before a record's payload: its length and its CRC-32.
pub const HEADER_BYTES: usize = 8;

/// The largest payload a record may carry, bytes (64 MiB): a corrupted length is refused
/// before anything is allocated for it.
pub const MAX_RECORD_BYTES: u32 = 64 << 20;

/// Why a file's records cannot be read.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// The file does not start with the expected magic (another kind of file, or empty).
    #[error("not a {expected} file (bad magic)")]
    BadMagic {
        /// What the file should be, e.g. `event log`.
        expected: &'static str,
    },
    /// A record runs past the end of the file: a torn or truncated write.
    #[error("truncated record at byte {offset}: {needed} bytes needed, {available} left")]
    Truncated {
        /// The record's byte offset in the file.
        offset: u64,
        /// Bytes the record's header says it has (header included).
        needed: u64,
        /// Bytes left in the file from the offset.
        available: u64,
    },
    /// A record's length exceeds [`MAX_RECORD_BYTES`].
    #[error("record at byte {offset} claims {length} bytes (at most {MAX_RECORD_BYTES})")]
    TooLong {
        /// The record's byte offset.
        offset: u64,
        /// Its claimed payload length.
        length: u32,
    },
    /// A record's payload does not match its CRC-32.
    #[error("checksum mismatch in the record at byte {offset}")]
    Checksum {
        /// The record's byte offset.
        offset: u64,
    },
    /// A whole, checksummed record whose payload does not decode.
    #[error("record at byte {offset} does not decode: {reason}")]
    Decode {
        /// The record's byte offset.
        offset: u64,
        /// The decoder's message.
        reason: String,
    },
    /// A value could not be encoded (a bug: every type here encodes).
    #[error("encoding a record: {0}")]
    Encode(String),
}

/// Appends one record of `payload` to `out`.
///
/// # Errors
/// [`RecordError::Encode`] when the payload exceeds [`MAX_RECORD_BYTES`].
pub fn write_record(out: &mut Vec<u8>, payload: &[u8]) -> Result<(), RecordError> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|l| *l <= MAX_RECORD_BYTES)
        .ok_or_else(|| RecordError::Encode(format!("payload of {} bytes", payload.len())))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    Ok(())
}

/// The payloads of the records of `bytes` after its `magic`, with each one's byte offset.
///
/// # Errors
/// [`RecordError::BadMagic`], [`RecordError::Truncated`], [`RecordError::TooLong`],
/// [`RecordError::Checksum`], naming the first bad record.
pub fn read_records<'a>(
    bytes: &'a [u8],
    magic: &[u8; 8],
    expected: &'static str,
) -> Result<Vec<(u64, &'a [u8])>, RecordError> {
    if bytes.len() < magic.len() || &bytes[..magic.len()] != magic {
        return Err(RecordError::BadMagic { expected });
    }
    let mut out = Vec::new();
    let mut at = magic.len();
    while at < bytes.len() {
        let offset = at as u64;
        let available = (bytes.len() - at) as u64;
        if available < HEADER_BYTES as u64 {
            return Err(RecordError::Truncated {
                offset,
                needed: HEADER_BYTES as u64,
                available,
            });
        }
        let word = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&bytes[at + i..at + i + 4]);
            u32::from_le_bytes(w)
        };
        let length = word(0);
        let crc = word(4);
        if length > MAX_RECORD_BYTES {
            return Err(RecordError::TooLong { offset, length });
        }
        let needed = HEADER_BYTES as u64 + u64::from(length);
        if needed > available {
            return Err(RecordError::Truncated {
                offset,
                needed,
                available,
            });
        }
        let payload = &bytes[at + HEADER_BYTES..at + HEADER_BYTES + length as usize];
        if crc32fast::hash(payload) != crc {
            return Err(RecordError::Checksum { offset });
        }
        out.push((offset, payload));
        at += HEADER_BYTES + length as usize;
    }
    Ok(out)
}

/// MessagePack of `value`, as a record payload.
///
/// # Errors
/// [`RecordError::Encode`] (a bug).
pub fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, RecordError> {
    rmp_serde::to_vec(value).map_err(|e| RecordError::Encode(e.to_string()))
}

/// A record payload decoded from MessagePack.
///
/// # Errors
/// [`RecordError::Decode`] naming `offset`.
pub fn decode<T: serde::de::DeserializeOwned>(
    payload: &[u8],
    offset: u64,
) -> Result<T, RecordError> {
    rmp_serde::from_slice(payload).map_err(|e| RecordError::Decode {
        offset,
        reason: e.to_string(),
    })
}
