//! What a picture shows besides the graph: the options every format reads.

use super::layout::Direction;
use crate::stats::BufferModel;

/// What a picture shows besides the graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Label every edge with its channels (logical connections) and target network buffers.
    pub edge_stats: bool,
    /// The buffer model of those numbers (Flink 1.20's defaults unless changed).
    pub buffers: BufferModel,
    /// Where the SVG's ranks go (left to right unless changed).
    pub direction: Direction,
}
