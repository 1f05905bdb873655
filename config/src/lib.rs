//! Configuration as Flink's: a `config.yaml` in Flink 1.19+'s shape (nested maps or flat dotted
//! keys), `-D key=value` arguments and `CONFLUX_*` environment variables, resolved against one
//! table of keys ([`KEYS`]) into typed settings.
//!
//! Pure: text in, typed [`Resolved`] settings or a typed [`ConfigError`] out; the CLI reads the
//! file and the environment, applies the settings to the flags no one gave on the command line
//! (flag > `-D` > environment > file > default) and logs the [`Warning`]s.
//!
//! ```
//! use conflux_config::{resolve, Command, Sources, Value};
//! let file = "rest:\n  port: 0\nheartbeat.interval: 2 s\n";
//! let dynamic = ["rest.port=9091".to_owned()];
//! let resolved = resolve(
//!     Command::JobManager,
//!     &Sources { file: Some(("config.yaml", file)), env: &|_| None, dynamic: &dynamic },
//! )
//! .unwrap();
//! assert_eq!(resolved.get("rest.port").unwrap().value, Value::Int(9091));
//! assert_eq!(resolved.get("heartbeat.interval").unwrap().value, Value::DurationMs(2000));
//! ```

mod error;
mod keys;
mod resolve;
mod secret;
mod suggest;
mod value;
mod yaml;

pub use error::{ConfigError, Origin, Warning};
pub use keys::{find, Command, Key, KEYS};
pub use resolve::{is_known, resolve, Resolved, Setting, Sources};
pub use secret::{is_sensitive, Secret};
pub use suggest::nearest_key;
pub use value::{parse_duration_ms, parse_memory_bytes, Value, ValueType};
pub use yaml::{parse as parse_yaml, Entry};

#[cfg(test)]
mod tests;
