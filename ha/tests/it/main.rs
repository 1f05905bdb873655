//! The high-availability services against a real ZooKeeper server (skipped, saying why, when
//! Debian's `zookeeper` package is not installed).

mod election;
