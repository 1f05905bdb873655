//! Integration tests of the decider: Flink 1.20's worked examples (`flink_cases`) and property
//! tests (`properties`, `skew_split`).

mod flink_cases;
mod properties;
mod skew_split;
