//! The adaptive batch scheduler's options, as Flink 1.20's `BatchExecutionOptions`.

/// One mebibyte (1,048,576 bytes).
pub const MIB: u64 = 1024 * 1024;

/// The options of the adaptive batch scheduler that the decider reads, with Flink 1.20's names
/// and defaults (`execution.batch.adaptive.auto-parallelism.*` in Flink's `BatchExecutionOptions`).
///
/// `Default` gives Flink 1.20's defaults: `min_parallelism` 1, `max_parallelism` 128,
/// `avg_data_volume_per_task` 16 MiB and `default_source_parallelism` unset (a source then gets
/// the max parallelism). A vertex's own max parallelism is respected on top of these (see
/// [`VertexToDecide`](crate::VertexToDecide)). [`validate`](Self::validate) checks the same
/// preconditions as Flink's decider constructor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchExecutionOptions {
    /// `min-parallelism`: the lower bound of a decided parallelism (default 1, must be >= 1).
    pub min_parallelism: u32,
    /// `max-parallelism`: the upper bound of a decided parallelism (default 128, must be
    /// >= `min_parallelism`).
    pub max_parallelism: u32,
    /// `avg-data-volume-per-task`, in bytes: the bytes one subtask is meant to read (default
    /// 16 MiB, must be >= 1).
    pub avg_data_volume_per_task: u64,
    /// `default-source-parallelism`: the parallelism of an undecided source (a vertex with no
    /// inputs). `None` (Flink 1.20's default) falls back to `max_parallelism`; either way capped
    /// by the vertex's own max parallelism. Must be >= 1 when set.
    pub default_source_parallelism: Option<u32>,
}

impl Default for BatchExecutionOptions {
    fn default() -> Self {
        BatchExecutionOptions {
            min_parallelism: 1,
            max_parallelism: 128,
            avg_data_volume_per_task: 16 * MIB,
            default_source_parallelism: None,
        }
    }
}

impl BatchExecutionOptions {
    /// Checks Flink's preconditions: `min_parallelism >= 1`, `max_parallelism >=
    /// min_parallelism`, `avg_data_volume_per_task >= 1`, `default_source_parallelism >= 1` when
    /// set.
    ///
    /// # Errors
    /// [`DecideError::InvalidOptions`](crate::DecideError::InvalidOptions) naming the first
    /// broken rule.
    pub fn validate(&self) -> Result<(), crate::DecideError> {
        let broken = if self.min_parallelism == 0 {
            Some("min-parallelism must be at least 1")
        } else if self.max_parallelism < self.min_parallelism {
            Some("max-parallelism must be at least min-parallelism")
        } else if self.avg_data_volume_per_task == 0 {
            Some("avg-data-volume-per-task must be at least 1 byte")
        } else if self.default_source_parallelism == Some(0) {
            Some("default-source-parallelism must be at least 1")
        } else {
            None
        };
        match broken {
            Some(rule) => Err(crate::DecideError::InvalidOptions(rule)),
            None => Ok(()),
        }
    }

    /// The parallelism given to an undecided source whose own max parallelism is
    /// `vertex_max_parallelism`: `default_source_parallelism`, or `max_parallelism` when unset,
    /// capped by `vertex_max_parallelism` (Flink 1.20's `computeSourceParallelismUpperBound`).
    pub fn source_parallelism(&self, vertex_max_parallelism: u32) -> u32 {
        self.default_source_parallelism
            .unwrap_or(self.max_parallelism)
            .min(vertex_max_parallelism)
    }
}
