#!/usr/bin/env bash
# The test command (README): builds and runs every test of the workspace.
# Installs what the tests need when it is missing: the S3-compatible test server `s3s-fs`
# (the blob-server crate's S3 tests start it themselves on a free loopback port).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v s3s-fs >/dev/null 2>&1; then
  echo "s3s-fs not found on PATH: installing it (cargo install s3s-fs@0.14.1)"
  cargo install s3s-fs@0.14.1 --features binary --locked
fi
cargo test --workspace --locked "$@"
