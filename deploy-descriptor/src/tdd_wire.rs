//! The bytes of a [`TaskDeploymentDescriptor`] as the JobManager sends it to a TaskManager
//! (Flink ships the TDD as a Java-serialised RPC argument).
//!
//! MessagePack (rmp-serde) of a mirror of the descriptor. The serialised parts a TDD already
//! holds (job and task information, descriptor groups: framed, compressed, checksummed by
//! [`wire`](crate::wire)) are copied as opaque byte strings, so a descriptor encodes in
//! O(inputs + outputs + inline bytes) and every part keeps its own integrity check.

use std::sync::Arc;

use bytes::Bytes;
use conflux_blob_api::{BlobKey, JobId};
use conflux_graph::{ConsumedPartitionGroupId, ResultPartitionType};
use serde::{Deserialize, Serialize};

use crate::offload::MaybeOffloaded;
use crate::tdd::{
    InputGateDeploymentDescriptor, ResultPartitionDeploymentDescriptor, TaskDeploymentDescriptor,
};
use crate::wire::WireError;
use crate::{AllocationId, ExecutionAttemptId, ResultPartitionId};

#[derive(Serialize, Deserialize)]
enum WireMaybeOffloaded {
    Inline(Bytes),
    Offloaded { key: BlobKey, len: u64 },
}

#[derive(Serialize, Deserialize)]
struct WireResultPartition {
    partition: ResultPartitionId,
    partition_type: String,
    number_of_subpartitions: u32,
    max_parallelism: u64,
}

#[derive(Serialize, Deserialize)]
struct WireInputGate {
    result: u32,
    group: u32,
    partition_type: String,
    consumed_subpartitions: (u32, u32),
    number_of_channels: u32,
    consumed_channels: (u32, u32),
    descriptor_groups: Vec<WireMaybeOffloaded>,
}

#[derive(Serialize, Deserialize)]
struct WireTdd {
    job_id: JobId,
    execution_attempt: ExecutionAttemptId,
    allocation: AllocationId,
    job_information: WireMaybeOffloaded,
    task_information: WireMaybeOffloaded,
    produced_partitions: Vec<WireResultPartition>,
    input_gates: Vec<WireInputGate>,
}

fn to_wire(m: &MaybeOffloaded) -> WireMaybeOffloaded {
    match m {
        MaybeOffloaded::Inline(bytes) => WireMaybeOffloaded::Inline(bytes.clone()),
        MaybeOffloaded::Offloaded { key, len } => WireMaybeOffloaded::Offloaded {
            key: *key,
            len: *len as u64,
        },
    }
}

fn from_wire(m: WireMaybeOffloaded, what: &str) -> Result<MaybeOffloaded, WireError> {
    Ok(match m {
        WireMaybeOffloaded::Inline(bytes) => MaybeOffloaded::Inline(bytes),
        WireMaybeOffloaded::Offloaded { key, len } => MaybeOffloaded::Offloaded {
            key,
            len: usize::try_from(len)
                .map_err(|_| WireError::Decode(format!("{what}: length {len} too large")))?,
        },
    })
}

fn partition_type(name: &str, what: &str) -> Result<ResultPartitionType, WireError> {
    ResultPartitionType::parse(name)
        .ok_or_else(|| WireError::Decode(format!("{what}: unknown partition type {name:?}")))
}

/// Serialises a descriptor for the RPC that submits its task.
///
/// # Errors
/// [`WireError::Encode`] only on a bug.
pub fn encode_tdd(tdd: &TaskDeploymentDescriptor) -> Result<Vec<u8>, WireError> {
    let wire = WireTdd {
        job_id: tdd.job_id,
        execution_attempt: tdd.execution_attempt,
        allocation: tdd.allocation,
        job_information: to_wire(&tdd.job_information),
        task_information: to_wire(&tdd.task_information),
        produced_partitions: tdd
            .produced_partitions
            .iter()
            .map(|p| WireResultPartition {
                partition: p.partition,
                partition_type: p.partition_type.as_str().to_owned(),
                number_of_subpartitions: p.number_of_subpartitions,
                max_parallelism: p.max_parallelism,
            })
            .collect(),
        input_gates: tdd
            .input_gates
            .iter()
            .map(|g| WireInputGate {
                result: g.result,
                group: g.group.0,
                partition_type: g.partition_type.as_str().to_owned(),
                consumed_subpartitions: (
                    *g.consumed_subpartitions.start(),
                    *g.consumed_subpartitions.end(),
                ),
                number_of_channels: g.number_of_channels,
                consumed_channels: (g.consumed_channels.start, g.consumed_channels.end),
                descriptor_groups: g.descriptor_groups.iter().map(to_wire).collect(),
            })
            .collect(),
    };
    rmp_serde::to_vec(&wire).map_err(|e| WireError::Encode(e.to_string()))
}

/// Reads what [`encode_tdd`] wrote.
///
/// # Errors
/// [`WireError::Decode`] naming the part that does not decode (truncated or foreign bytes, an
/// unknown partition type of gate or partition *i*, an inverted subpartition range).
pub fn decode_tdd(bytes: &[u8]) -> Result<TaskDeploymentDescriptor, WireError> {
    let wire: WireTdd = rmp_serde::from_slice(bytes)
        .map_err(|e| WireError::Decode(format!("task deployment descriptor: {e}")))?;
    let produced_partitions = wire
        .produced_partitions
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            Ok(ResultPartitionDeploymentDescriptor {
                partition: p.partition,
                partition_type: partition_type(&p.partition_type, &format!("partition {i}"))?,
                number_of_subpartitions: p.number_of_subpartitions,
                max_parallelism: p.max_parallelism,
            })
        })
        .collect::<Result<_, WireError>>()?;
    let input_gates = wire
        .input_gates
        .into_iter()
        .enumerate()
        .map(|(i, g)| {
            let what = format!("input gate {i}");
            let (first, last) = g.consumed_subpartitions;
            if first > last {
                return Err(WireError::Decode(format!(
                    "{what}: subpartition range {first}..={last} is inverted"
                )));
            }
            let (from, to) = g.consumed_channels;
            if from > to || to > g.number_of_channels {
                return Err(WireError::Decode(format!(
                    "{what}: channel range {from}..{to} is not within its {} channels",
                    g.number_of_channels
                )));
            }
            let descriptor_groups = g
                .descriptor_groups
                .into_iter()
                .map(|m| from_wire(m, &what))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(InputGateDeploymentDescriptor {
                result: g.result,
                group: ConsumedPartitionGroupId(g.group),
                partition_type: partition_type(&g.partition_type, &what)?,
                consumed_subpartitions: first..=last,
                number_of_channels: g.number_of_channels,
                consumed_channels: from..to,
                descriptor_groups: Arc::from(descriptor_groups),
            })
        })
        .collect::<Result<_, WireError>>()?;
    Ok(TaskDeploymentDescriptor {
        job_id: wire.job_id,
        execution_attempt: wire.execution_attempt,
        allocation: wire.allocation,
        job_information: from_wire(wire.job_information, "job information")?,
        task_information: from_wire(wire.task_information, "task information")?,
        produced_partitions,
        input_gates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TaskManagerId;

    fn sample() -> TaskDeploymentDescriptor {
        let key = BlobKey::for_content(
            conflux_blob_api::BlobKind::Permanent,
            Some(JobId([7; 16])),
            b"group",
        );
        TaskDeploymentDescriptor {
            job_id: JobId([7; 16]),
            execution_attempt: ExecutionAttemptId {
                vertex: 12,
                attempt: 3,
            },
            allocation: AllocationId {
                task_manager: TaskManagerId(2),
                slot: 5,
            },
            job_information: MaybeOffloaded::Inline(Bytes::from_static(b"job")),
            task_information: MaybeOffloaded::Offloaded { key, len: 99 },
            produced_partitions: vec![ResultPartitionDeploymentDescriptor {
                partition: ResultPartitionId {
                    result: 1,
                    partition: 4,
                    producer: ExecutionAttemptId {
                        vertex: 12,
                        attempt: 3,
                    },
                },
                partition_type: ResultPartitionType::HybridFull,
                number_of_subpartitions: 10_000,
                max_parallelism: 32_768,
            }],
            input_gates: vec![InputGateDeploymentDescriptor {
                result: 0,
                group: ConsumedPartitionGroupId(8),
                partition_type: ResultPartitionType::Blocking,
                consumed_subpartitions: 2..=2,
                number_of_channels: 10_000,
                consumed_channels: 100..5_000,
                descriptor_groups: Arc::from(vec![
                    MaybeOffloaded::Offloaded { key, len: 2_300 },
                    MaybeOffloaded::Inline(Bytes::from_static(&[1, 2, 3])),
                ]),
            }],
        }
    }

    #[test]
    fn round_trips_every_field() {
        let tdd = sample();
        let bytes = encode_tdd(&tdd).unwrap();
        assert_eq!(decode_tdd(&bytes).unwrap(), tdd);
    }

    #[test]
    fn inline_bytes_are_a_byte_string_not_an_array_of_integers() {
        let mut tdd = sample();
        tdd.job_information = MaybeOffloaded::Inline(Bytes::from(vec![0xffu8; 1_000]));
        let bytes = encode_tdd(&tdd).unwrap();
        // 1,000 bytes of 0xff as integers would take 2,000 bytes of MessagePack.
        assert!(bytes.len() < 1_400, "{} bytes", bytes.len());
    }

    #[test]
    fn a_channel_range_past_the_channels_is_refused() {
        let mut tdd = sample();
        tdd.input_gates[0].consumed_channels = 0..10_001;
        let bytes = encode_tdd(&tdd).unwrap();
        let err = decode_tdd(&bytes).unwrap_err().to_string();
        assert!(
            err.contains("input gate 0: channel range 0..10001 is not within its 10000 channels"),
            "{err}"
        );
    }

    #[test]
    fn truncated_and_foreign_bytes_are_errors() {
        let bytes = encode_tdd(&sample()).unwrap();
        for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
            let err = decode_tdd(&bytes[..cut]).unwrap_err();
            assert!(
                err.to_string().contains("task deployment descriptor"),
                "{err}"
            );
        }
        assert!(decode_tdd(b"not a descriptor at all").is_err());
    }
}
