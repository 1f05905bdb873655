//! Integration tests of the decider: Flink 1.20's worked examples (`flink_cases`), property
//! tests (`properties`, `skew_split`) and the bytes each decided subtask reads (`bytes_read`).

mod bytes_read;
mod flink_cases;
mod properties;
mod skew_split;
