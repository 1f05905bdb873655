//! Integration tests of `conflux-checkpoint`.
