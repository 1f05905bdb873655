//! Running the built `conflux` binary and reading its outputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// Runs `conflux ARGS` in the repository root and waits for it.
pub(crate) fn conflux(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conflux"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("runs conflux")
}

/// The repository root (fixtures are relative to it).
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The absolute path of `fixtures/NAME`.
pub(crate) fn fixture(name: &str) -> String {
    repo().join("fixtures").join(name).display().to_string()
}

/// Standard output as JSON; panics showing both streams when it is not.
pub(crate) fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}
