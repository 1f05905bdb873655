#!/usr/bin/env bash
# The test command (README): builds and runs every test of the workspace.
# Installs what the tests need when it is missing; today that is nothing beyond the Rust
# toolchain (the S3-compatible test server comes with the blob-server crate).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked "$@"
