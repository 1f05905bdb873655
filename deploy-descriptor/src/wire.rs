//! The versioned wire format of serialised descriptor data (shuffle descriptor groups, job and
//! task information): a 16-byte header, then a zstd-compressed MessagePack payload.
//!
//! ```text
//! offset  size  field
//!  0      4     magic b"CFXD"
//!  4      2     format version, little-endian (1)
//!  6      1     payload kind (1 shuffle descriptor group, 2 job information, 3 task information)
//!  7      1     codec (1 = zstd)
//!  8      4     uncompressed payload length in bytes, little-endian
//! 12      4     CRC-32 (IEEE) of the compressed payload, little-endian
//! 16      ...   compressed payload
//! ```
//!
//! A reader rejects foreign or corrupted bytes with a [`WireError`] saying what is wrong and
//! where, before decompressing anything it cannot trust. (Flink uses Java serialisation through
//! DEFLATE, `CompressedSerializedValue`, FLINK-23005; zstd is smaller and faster, see the bench.)

use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

/// The magic at offset 0.
pub const MAGIC: [u8; 4] = *b"CFXD";
/// The format version this build writes and reads.
pub const VERSION: u16 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 16;
/// Largest uncompressed payload a reader accepts (1 GiB), so a corrupted length cannot make it
/// allocate without bound.
pub const MAX_PAYLOAD: u32 = 1 << 30;
/// zstd level: 3, zstd's default, is within a few percent of higher levels on descriptor data
/// and several times faster.
const ZSTD_LEVEL: i32 = 3;
const CODEC_ZSTD: u8 = 1;

/// What a serialised value holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PayloadKind {
    /// A [`ShuffleDescriptorGroup`](crate::tdd::ShuffleDescriptorGroup).
    ShuffleDescriptorGroup = 1,
    /// [`JobInformation`](crate::tdd::JobInformation).
    JobInformation = 2,
    /// [`TaskInformation`](crate::tdd::TaskInformation).
    TaskInformation = 3,
}

/// Why bytes could not be read as a serialised value.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// Shorter than the header.
    #[error("{len} bytes is shorter than the {HEADER_LEN}-byte header")]
    TooShort {
        /// Length of the input.
        len: usize,
    },
    /// Bytes 0..4 are not the magic: not Conflux descriptor data.
    #[error(
        "bytes 0..4 are {found:02x?}, not the magic {MAGIC:02x?}: not Conflux descriptor data"
    )]
    BadMagic {
        /// What was found.
        found: [u8; 4],
    },
    /// Written by an incompatible version.
    #[error(
        "format version {found} at byte 4 is not supported (this build reads version {VERSION})"
    )]
    UnsupportedVersion {
        /// The version found.
        found: u16,
    },
    /// Another payload kind than expected.
    #[error("byte 6 says payload kind {found}, expected {expected}")]
    WrongKind {
        /// Kind byte found.
        found: u8,
        /// Kind byte expected.
        expected: u8,
    },
    /// An unknown codec byte.
    #[error("byte 7: unknown codec {0}")]
    UnknownCodec(u8),
    /// The declared uncompressed length is implausible.
    #[error("bytes 8..12 declare {0} uncompressed bytes, above the limit of {MAX_PAYLOAD}")]
    PayloadTooLarge(u32),
    /// The payload's checksum does not match: corrupted in storage or transit.
    #[error("checksum mismatch over bytes {HEADER_LEN}..{end}: header says {expected:08x}, content is {actual:08x} (corrupted)")]
    Checksum {
        /// End of the payload.
        end: usize,
        /// CRC in the header.
        expected: u32,
        /// CRC of the bytes.
        actual: u32,
    },
    /// Decompression failed or gave another length than declared.
    #[error("payload at byte {HEADER_LEN} does not decompress: {0}")]
    Decompress(String),
    /// The decompressed payload is not the expected structure.
    #[error("payload does not decode: {0}")]
    Decode(String),
    /// Encoding failed (a bug: every value of these types encodes).
    #[error("bug: value does not encode: {0}")]
    Encode(String),
}

/// Sizes of one encoding, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct EncodedSize {
    /// MessagePack bytes before compression.
    pub raw: usize,
    /// Bytes on the wire, header included.
    pub compressed: usize,
}

/// The uncompressed payload of `value`: its MessagePack bytes (compact: structs as arrays).
///
/// # Errors
/// [`WireError::Encode`] only on a bug.
pub fn payload<T: Serialize>(value: &T) -> Result<Vec<u8>, WireError> {
    rmp_serde::to_vec(value).map_err(|e| WireError::Encode(e.to_string()))
}

/// Serialises `value` (MessagePack), compresses it (zstd) and frames it. Returns the framed
/// bytes and their sizes. For job and task information; descriptor groups have a columnar
/// payload of their own ([`encode_descriptor_group`]).
///
/// # Errors
/// [`WireError::Encode`] only on a bug, [`WireError::PayloadTooLarge`] above 1 GiB.
pub fn encode<T: Serialize>(
    kind: PayloadKind,
    value: &T,
) -> Result<(Vec<u8>, EncodedSize), WireError> {
    frame(kind, &payload(value)?)
}

/// Compresses and frames an uncompressed payload.
fn frame(kind: PayloadKind, raw: &[u8]) -> Result<(Vec<u8>, EncodedSize), WireError> {
    let raw_len = u32::try_from(raw.len())
        .ok()
        .filter(|&n| n <= MAX_PAYLOAD)
        .ok_or(WireError::PayloadTooLarge(u32::MAX))?;
    let compressed = compress(raw)?;
    let mut out = Vec::with_capacity(HEADER_LEN + compressed.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.push(kind as u8);
    out.push(CODEC_ZSTD);
    out.extend_from_slice(&raw_len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&compressed).to_le_bytes());
    out.extend_from_slice(&compressed);
    let size = EncodedSize {
        raw: raw.len(),
        compressed: out.len(),
    };
    Ok((out, size))
}

/// Compresses with a per-thread zstd context: creating one costs more than compressing a small
/// pointwise group, and a job has thousands of them.
fn compress(raw: &[u8]) -> Result<Vec<u8>, WireError> {
    thread_local! {
        static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(
                zstd::bulk::Compressor::new(ZSTD_LEVEL)
                    .map_err(|e| WireError::Encode(e.to_string()))?,
            );
        }
        match slot.as_mut() {
            Some(c) => c
                .compress(raw)
                .map_err(|e| WireError::Encode(e.to_string())),
            None => unreachable!("bug: compressor was just created"),
        }
    })
}

/// Checks the frame and decodes a value of the expected kind.
///
/// # Errors
/// A [`WireError`] naming what is wrong: length, magic, version, kind, codec, declared length,
/// checksum, decompression, structure.
pub fn decode<T: DeserializeOwned>(kind: PayloadKind, bytes: &[u8]) -> Result<T, WireError> {
    let raw = unframe(kind, bytes)?;
    rmp_serde::from_slice(&raw).map_err(|e| WireError::Decode(e.to_string()))
}

/// Checks the frame and returns the decompressed payload.
fn unframe(kind: PayloadKind, bytes: &[u8]) -> Result<Vec<u8>, WireError> {
    if bytes.len() < HEADER_LEN {
        return Err(WireError::TooShort { len: bytes.len() });
    }
    let word = |at: usize| [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
    let magic = word(0);
    if magic != MAGIC {
        return Err(WireError::BadMagic { found: magic });
    }
    let version = u16::from_le_bytes([bytes[4], bytes[5]]);
    if version != VERSION {
        return Err(WireError::UnsupportedVersion { found: version });
    }
    if bytes[6] != kind as u8 {
        return Err(WireError::WrongKind {
            found: bytes[6],
            expected: kind as u8,
        });
    }
    if bytes[7] != CODEC_ZSTD {
        return Err(WireError::UnknownCodec(bytes[7]));
    }
    let raw_len = u32::from_le_bytes(word(8));
    if raw_len > MAX_PAYLOAD {
        return Err(WireError::PayloadTooLarge(raw_len));
    }
    let expected = u32::from_le_bytes(word(12));
    let payload = &bytes[HEADER_LEN..];
    let actual = crc32fast::hash(payload);
    if actual != expected {
        return Err(WireError::Checksum {
            end: bytes.len(),
            expected,
            actual,
        });
    }
    let raw = zstd::bulk::decompress(payload, raw_len as usize)
        .map_err(|e| WireError::Decompress(e.to_string()))?;
    if raw.len() != raw_len as usize {
        return Err(WireError::Decompress(format!(
            "{} bytes, header declares {raw_len}",
            raw.len()
        )));
    }
    Ok(raw)
}

/// Encodes a shuffle descriptor group in the columnar payload (below), compressed and framed.
///
/// Descriptor groups are the bulk of deployment data (10,000 descriptors for each consumer of a
/// 10k x 10k edge), so they get a layout of their own: little-endian `u32` columns, delta-coded
/// where neighbours are alike (partitions, vertices, TaskManagers), which zstd shrinks to a few
/// bits per descriptor and which decodes without per-field parsing:
///
/// ```text
/// u32 len, u8 flags (bit 0: positions present)
/// [len x u32 positions, delta-coded]            if bit 0
/// len x u8 kind (0 unknown, 1 known)
/// len x u32 result, partition, producer vertex (delta-coded), producer attempt
/// then for the k known descriptors:
/// k x u32 TaskManager (delta), connection index (delta), address index (delta)
/// u32 addresses, then per address: u8 family (4 or 6), 16 bytes IP, u16 port
/// ```
///
/// # Errors
/// [`WireError::PayloadTooLarge`] above 1 GiB.
pub fn encode_descriptor_group(
    group: &crate::tdd::ShuffleDescriptorGroup,
) -> Result<(Vec<u8>, EncodedSize), WireError> {
    frame(
        PayloadKind::ShuffleDescriptorGroup,
        &columnar::encode(group),
    )
}

/// A descriptor group encoded as its descriptors come, without holding them (the columnar
/// payload of [`encode_descriptor_group`], which it equals for the same descriptors).
pub(crate) struct DescriptorGroupEncoder(columnar::Encoder);

impl DescriptorGroupEncoder {
    /// An encoder for about `len` descriptors, without positions.
    pub(crate) fn new(len: usize) -> DescriptorGroupEncoder {
        DescriptorGroupEncoder(columnar::Encoder::new(len, false))
    }

    /// Appends the next descriptor.
    pub(crate) fn push(&mut self, descriptor: &crate::ShuffleDescriptor) {
        self.0.push(0, descriptor);
    }

    /// Descriptors appended.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Compressed and framed, as [`encode_descriptor_group`].
    ///
    /// # Errors
    /// [`WireError::PayloadTooLarge`] above 1 GiB.
    pub(crate) fn finish(self) -> Result<(Vec<u8>, EncodedSize), WireError> {
        frame(PayloadKind::ShuffleDescriptorGroup, &self.0.finish())
    }
}

/// The uncompressed columnar payload of a group (what [`encode_descriptor_group`] compresses),
/// for size comparisons.
pub fn descriptor_group_payload(group: &crate::tdd::ShuffleDescriptorGroup) -> Vec<u8> {
    columnar::encode(group)
}

/// Decodes what [`encode_descriptor_group`] wrote.
///
/// # Errors
/// A [`WireError`] for a bad frame; [`WireError::Decode`] naming the byte offset where the
/// payload is truncated or inconsistent.
pub fn decode_descriptor_group(
    bytes: &[u8],
) -> Result<crate::tdd::ShuffleDescriptorGroup, WireError> {
    columnar::decode(&unframe(PayloadKind::ShuffleDescriptorGroup, bytes)?)
}

mod columnar {
    use std::collections::HashMap;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

    use super::WireError;
    use crate::{
        ExecutionAttemptId, ResultPartitionId, ShuffleDescriptor, ShuffleDescriptorGroup,
        TaskManagerId, TaskManagerLocation,
    };

    fn put(out: &mut Vec<u8>, x: u32) {
        out.extend_from_slice(&x.to_le_bytes());
    }

    fn count(n: usize) -> u32 {
        // Groups hold at most u32::MAX entries (graph invariant).
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// A column of `u32`s, each written as the difference to the previous one (wrapping).
    #[derive(Default)]
    struct DeltaColumn {
        bytes: Vec<u8>,
        previous: u32,
    }

    impl DeltaColumn {
        fn with_capacity(n: usize) -> DeltaColumn {
            DeltaColumn {
                bytes: Vec::with_capacity(n * 4),
                previous: 0,
            }
        }

        fn push(&mut self, v: u32) {
            put(&mut self.bytes, v.wrapping_sub(self.previous));
            self.previous = v;
        }
    }

    /// The columnar payload written one descriptor at a time: each column fills a buffer of its
    /// own and [`finish`](Self::finish) lays them out in order, so a group is encoded in one
    /// pass without its descriptors ever being held (a million of them took 60 MB).
    pub(crate) struct Encoder {
        len: usize,
        positions: Option<DeltaColumn>,
        kinds: Vec<u8>,
        results: DeltaColumn,
        partitions: DeltaColumn,
        vertices: DeltaColumn,
        attempts: Vec<u8>,
        task_managers: DeltaColumn,
        connections: DeltaColumn,
        address_indices: DeltaColumn,
        addresses: Vec<SocketAddr>,
        address_index: HashMap<SocketAddr, u32>,
        /// The last address and its index: neighbours mostly share one (the producers of a
        /// TaskManager's slots), so only a change of address is looked up; hashing every
        /// descriptor's address took half the time of encoding a million.
        last: Option<(SocketAddr, u32)>,
    }

    impl Encoder {
        /// An encoder for about `len` descriptors, with positions when `positioned`.
        pub(crate) fn new(len: usize, positioned: bool) -> Encoder {
            Encoder {
                len: 0,
                positions: positioned.then(|| DeltaColumn::with_capacity(len)),
                kinds: Vec::with_capacity(len),
                results: DeltaColumn::with_capacity(len),
                partitions: DeltaColumn::with_capacity(len),
                vertices: DeltaColumn::with_capacity(len),
                attempts: Vec::with_capacity(len * 4),
                task_managers: DeltaColumn::with_capacity(len),
                connections: DeltaColumn::with_capacity(len),
                address_indices: DeltaColumn::with_capacity(len),
                addresses: Vec::new(),
                address_index: HashMap::new(),
                last: None,
            }
        }

        /// Appends a descriptor (at `position`, for an encoder with positions).
        pub(crate) fn push(&mut self, position: u32, d: &ShuffleDescriptor) {
            self.len += 1;
            if let Some(positions) = &mut self.positions {
                positions.push(position);
            }
            let partition = d.partition();
            self.kinds.push(u8::from(!d.is_unknown()));
            self.results.push(partition.result);
            self.partitions.push(partition.partition);
            self.vertices.push(partition.producer.vertex);
            put(&mut self.attempts, partition.producer.attempt);
            if let ShuffleDescriptor::Known {
                producer_location: l,
                connection_index,
                ..
            } = d
            {
                self.task_managers.push(l.id.0);
                self.connections.push(*connection_index);
                let index = match self.last {
                    Some((address, index)) if address == l.data_address => index,
                    _ => {
                        let addresses = &mut self.addresses;
                        let index =
                            *self.address_index.entry(l.data_address).or_insert_with(|| {
                                addresses.push(l.data_address);
                                count(addresses.len() - 1)
                            });
                        self.last = Some((l.data_address, index));
                        index
                    }
                };
                self.address_indices.push(index);
            }
        }

        /// Descriptors appended.
        pub(crate) fn len(&self) -> usize {
            self.len
        }

        /// The payload.
        pub(crate) fn finish(self) -> Vec<u8> {
            let columns = [
                self.positions.as_ref().map_or(&[][..], |p| &p.bytes[..]),
                &self.kinds,
                &self.results.bytes,
                &self.partitions.bytes,
                &self.vertices.bytes,
                &self.attempts,
                &self.task_managers.bytes,
                &self.connections.bytes,
                &self.address_indices.bytes,
            ];
            let size =
                9 + columns.iter().map(|c| c.len()).sum::<usize>() + self.addresses.len() * 19;
            let mut out = Vec::with_capacity(size);
            put(&mut out, count(self.len));
            out.push(u8::from(self.positions.is_some()));
            for column in columns {
                out.extend_from_slice(column);
            }
            put(&mut out, count(self.addresses.len()));
            for a in &self.addresses {
                let (family, ip) = match a.ip() {
                    IpAddr::V4(v4) => (4u8, v4.to_ipv6_mapped().octets()),
                    IpAddr::V6(v6) => (6u8, v6.octets()),
                };
                out.push(family);
                out.extend_from_slice(&ip);
                out.extend_from_slice(&a.port().to_le_bytes());
            }
            out
        }
    }

    pub(super) fn encode(group: &ShuffleDescriptorGroup) -> Vec<u8> {
        let d = &group.descriptors;
        let mut encoder = Encoder::new(d.len(), group.indices.is_some());
        for (i, x) in d.iter().enumerate() {
            let position = group.indices.as_ref().map_or(0, |p| p[i]);
            encoder.push(position, x);
        }
        encoder.finish()
    }

    struct Reader<'a> {
        bytes: &'a [u8],
        at: usize,
    }

    impl<'a> Reader<'a> {
        fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], WireError> {
            let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or_else(|| {
                WireError::Decode(format!(
                    "descriptor group payload ends at byte {} while reading {what} ({n} bytes from byte {})",
                    self.bytes.len(),
                    self.at
                ))
            })?;
            let slice = &self.bytes[self.at..end];
            self.at = end;
            Ok(slice)
        }

        fn u32(&mut self, what: &str) -> Result<u32, WireError> {
            let b = self.take(4, what)?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }

        fn column(&mut self, n: usize, what: &str, delta: bool) -> Result<Vec<u32>, WireError> {
            let bytes = self.take(n.saturating_mul(4), what)?;
            let mut previous = 0u32;
            Ok(bytes
                .chunks_exact(4)
                .map(|c| {
                    let v = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                    if delta {
                        previous = previous.wrapping_add(v);
                        previous
                    } else {
                        v
                    }
                })
                .collect())
        }
    }

    pub(super) fn decode(bytes: &[u8]) -> Result<ShuffleDescriptorGroup, WireError> {
        let mut r = Reader { bytes, at: 0 };
        let len = r.u32("the descriptor count")? as usize;
        if len > bytes.len() {
            return Err(WireError::Decode(format!(
                "descriptor count {len} exceeds the {} payload bytes",
                bytes.len()
            )));
        }
        let flags = r.take(1, "the flags")?[0];
        let indices = if flags & 1 == 1 {
            Some(r.column(len, "positions", true)?)
        } else {
            None
        };
        let kinds = r.take(len, "kinds")?.to_vec();
        let result = r.column(len, "results", true)?;
        let partition = r.column(len, "partitions", true)?;
        let vertex = r.column(len, "producer vertices", true)?;
        let attempt = r.column(len, "producer attempts", false)?;
        let known = kinds.iter().filter(|&&k| k == 1).count();
        if let Some(bad) = kinds.iter().position(|&k| k > 1) {
            return Err(WireError::Decode(format!(
                "descriptor {bad}: kind {} is neither 0 nor 1",
                kinds[bad]
            )));
        }
        let tm = r.column(known, "TaskManagers", true)?;
        let connection = r.column(known, "connection indices", true)?;
        let address_index = r.column(known, "address indices", true)?;
        let addresses_len = r.u32("the address count")? as usize;
        let mut addresses = Vec::with_capacity(addresses_len.min(known));
        for i in 0..addresses_len {
            let b = r.take(19, "an address")?;
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&b[1..17]);
            let port = u16::from_le_bytes([b[17], b[18]]);
            let ip = match b[0] {
                4 => IpAddr::V4(
                    Ipv6Addr::from(octets)
                        .to_ipv4_mapped()
                        .unwrap_or(Ipv4Addr::UNSPECIFIED),
                ),
                6 => IpAddr::V6(Ipv6Addr::from(octets)),
                other => {
                    return Err(WireError::Decode(format!(
                        "address {i}: family {other} is neither 4 nor 6"
                    )))
                }
            };
            addresses.push(SocketAddr::new(ip, port));
        }
        if r.at != bytes.len() {
            return Err(WireError::Decode(format!(
                "{} trailing bytes after byte {}",
                bytes.len() - r.at,
                r.at
            )));
        }
        let mut k = 0usize;
        let mut descriptors = Vec::with_capacity(len);
        for i in 0..len {
            let partition = ResultPartitionId {
                result: result[i],
                partition: partition[i],
                producer: ExecutionAttemptId {
                    vertex: vertex[i],
                    attempt: attempt[i],
                },
            };
            descriptors.push(if kinds[i] == 1 {
                let address = *addresses.get(address_index[k] as usize).ok_or_else(|| {
                    WireError::Decode(format!(
                        "descriptor {i}: address index {} of {}",
                        address_index[k],
                        addresses.len()
                    ))
                })?;
                let d = ShuffleDescriptor::Known {
                    partition,
                    producer_location: TaskManagerLocation {
                        id: TaskManagerId(tm[k]),
                        data_address: address,
                    },
                    connection_index: connection[k],
                };
                k += 1;
                d
            } else {
                ShuffleDescriptor::Unknown { partition }
            });
        }
        Ok(ShuffleDescriptorGroup {
            descriptors,
            indices,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv6Addr, SocketAddr};

    use proptest::prelude::*;

    use super::*;
    use crate::{
        ExecutionAttemptId, ResultPartitionId, ShuffleDescriptor, ShuffleDescriptorGroup,
        TaskManagerId, TaskManagerLocation,
    };

    fn sample() -> ShuffleDescriptorGroup {
        let partition = |p: u32, attempt| ResultPartitionId {
            result: 3,
            partition: p,
            producer: ExecutionAttemptId {
                vertex: 100 + p,
                attempt,
            },
        };
        ShuffleDescriptorGroup {
            descriptors: vec![
                ShuffleDescriptor::Known {
                    partition: partition(0, 0),
                    producer_location: TaskManagerLocation {
                        id: TaskManagerId(7),
                        data_address: SocketAddr::from(([10, 0, 0, 7], 6121)),
                    },
                    connection_index: 3,
                },
                ShuffleDescriptor::Unknown {
                    partition: partition(1, 2),
                },
                ShuffleDescriptor::Known {
                    partition: partition(2, 1),
                    producer_location: TaskManagerLocation {
                        id: TaskManagerId(2),
                        data_address: SocketAddr::from((Ipv6Addr::LOCALHOST, 9)),
                    },
                    connection_index: 3,
                },
            ],
            indices: Some(vec![5, 1, 9]),
        }
    }

    #[test]
    fn columnar_groups_round_trip() {
        for group in [
            sample(),
            ShuffleDescriptorGroup {
                indices: None,
                ..sample()
            },
            ShuffleDescriptorGroup {
                descriptors: vec![],
                indices: None,
            },
        ] {
            let (bytes, size) = encode_descriptor_group(&group).expect("encode");
            assert_eq!(size.compressed, bytes.len());
            assert_eq!(decode_descriptor_group(&bytes).expect("decode"), group);
        }
    }

    #[test]
    fn truncated_columnar_payload_names_the_offset() {
        let raw = columnar::encode(&sample());
        let error = columnar::decode(&raw[..raw.len() - 3]).expect_err("truncated");
        assert!(
            error.to_string().contains("while reading an address"),
            "{error}"
        );
        let mut extra = raw.clone();
        extra.push(0);
        assert!(columnar::decode(&extra)
            .expect_err("trailing")
            .to_string()
            .contains("trailing"));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// Any payload either decodes or is an error; never a panic or a huge allocation.
        #[test]
        fn random_columnar_payloads_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = columnar::decode(&bytes);
        }

        /// A valid payload with one damaged byte never panics either.
        #[test]
        fn damaged_columnar_payloads_never_panic(at in 0usize..400, flip in 1u8..) {
            let mut raw = columnar::encode(&sample());
            let at = at % raw.len();
            raw[at] ^= flip;
            let _ = columnar::decode(&raw);
        }
    }
}
