//! The test-support crate's integration tests: checks over the whole workspace's sources.

mod module_walls;
