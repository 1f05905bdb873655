//! Adaptive batch scheduling: deciding a job vertex's parallelism, and which producer partitions
//! and subpartitions each of its subtasks reads, from the bytes its inputs produced.
//!
//! Everything here is pure and synchronous: the caller (the dynamic execution graph, the
//! simulator) keeps, for each consumed result, the bytes of every subpartition summed over the
//! producers that finished, and calls [`decide_parallelism_and_input_infos`] once all producers
//! of the vertex are done, then [`ResultBytes::bytes_read`] for what each decided subtask reads
//! (Flink's input bytes of an execution vertex). The rules are Flink 1.20's
//! `DefaultVertexParallelismAndInputInfosDecider` and `VertexInputInfoComputationUtils`, with
//! Flink 1.20's `BatchExecutionOptions` defaults ([`BatchExecutionOptions::default`]);
//! reporting skewed subpartitions goes beyond Flink.
//!
//! ```
//! use conflux_adaptive::{decide_parallelism_and_input_infos, BatchExecutionOptions,
//!     ConsumedInput, VertexToDecide};
//! use conflux_graph::DistributionPattern;
//!
//! // A word count: 4 sources produced 1 GiB in all, spread evenly over 128 subpartitions.
//! let sums = vec![(1u64 << 30) / 128; 128];
//! let input = ConsumedInput::new(DistributionPattern::AllToAll, false, 4, &sums);
//! let decision = decide_parallelism_and_input_infos(
//!     &BatchExecutionOptions::default(),
//!     &VertexToDecide::undecided(128),
//!     &[input],
//! )
//! .unwrap();
//! assert_eq!(decision.parallelism, 64); // 1 GiB / 16 MiB
//! ```

mod decide_error;
mod decider;
mod input_info;
mod options;
mod produced_bytes;
mod skew_split;

pub use decide_error::DecideError;
pub use decider::{
    decide_parallelism_and_input_infos, ConsumedInput, ParallelismAndInputInfos,
    SkewedSubpartition, VertexToDecide, MAX_NUM_SUBPARTITIONS_PER_TASK_CONSUME, SKEW_FACTOR,
};
pub use input_info::{
    compute_consumed_subpartition_range, compute_vertex_input_info_for_all_to_all,
    compute_vertex_input_info_for_pointwise, ExecutionVertexInputInfo, IndexRange,
};
pub use options::{BatchExecutionOptions, MIB};
pub use produced_bytes::{BytesError, BytesRead, ResultBytes};
pub use skew_split::{split_skewed_subpartitions, split_threshold, SkewSplit, SplitSubpartition};
