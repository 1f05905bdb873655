//! Integration tests of `conflux-planner`.
