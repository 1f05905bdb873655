//! What can be wrong with a configuration, and what is only worth a warning.

use std::fmt;

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A line of the configuration file.
    File {
        /// The file as given.
        path: String,
        /// The 1-based line.
        line: usize,
    },
    /// An environment variable.
    Env(String),
    /// A `-D key=value`.
    Dynamic,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{path} line {line}"),
            Origin::Env(var) => write!(f, "environment variable {var}"),
            Origin::Dynamic => f.write_str("-D"),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// The file is not YAML, or not a map of keys.
    #[error("{path} line {line}: {message}")]
    Yaml {
        /// The file.
        path: String,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A value is not of its key's type (a secret's value is never shown).
    #[error("{origin}: {key}: `{value}` is not {expected}")]
    WrongType {
        /// Where it was given.
        origin: Origin,
        /// The key.
        key: String,
        /// The value as given (or `******`).
        value: String,
        /// What the key takes.
        expected: &'static str,
    },
    /// A key appears twice in the file.
    #[error("{path}: {key} is given twice, on lines {first} and {second}")]
    Duplicate {
        /// The file.
        path: String,
        /// The key.
        key: String,
        /// Its first line.
        first: usize,
        /// Its second line.
        second: usize,
    },
    /// A `-D` argument without `=`.
    #[error("-D {argument}: expected KEY=VALUE")]
    DynamicSyntax {
        /// The argument (a value that may be secret is cut off).
        argument: String,
    },
    /// Two keys that set one setting have different values.
    #[error("{first} ({first_origin}) and {second} ({second_origin}) set the same setting differently: give one")]
    Conflict {
        /// One key.
        first: &'static str,
        /// Where it was given.
        first_origin: Origin,
        /// The other.
        second: &'static str,
        /// Where that was given.
        second_origin: Origin,
    },
}

/// Something to tell the user that does not stop the command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// A key that no command knows, with the nearest known key.
    Unknown {
        /// Where it was given.
        origin: Origin,
        /// The key.
        key: String,
        /// The known key nearest to it.
        nearest: &'static str,
    },
    /// A `-D` key that this command does not take.
    NotTaken {
        /// The key.
        key: &'static str,
        /// The command.
        command: &'static str,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Unknown {
                origin,
                key,
                nearest,
            } => write!(
                f,
                "{origin}: unknown configuration key {key} (ignored; the nearest known key is {nearest})"
            ),
            Warning::NotTaken { key, command } => {
                write!(f, "-D {key}: `conflux {command}` does not use this key (ignored)")
            }
        }
    }
}
