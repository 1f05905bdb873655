#!/usr/bin/env bash
# The test command (README): builds and runs every test of the workspace.
# Installs what the tests need when it is missing: the S3-compatible test server `s3s-fs`
# (the blob-server crate's S3 tests start it themselves on a free loopback port), and the
# distribution's Chromium (the plan viewer's browser test drives it headless; about 10 s
# with Debian's packages).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v s3s-fs >/dev/null 2>&1; then
  echo "s3s-fs not found on PATH: installing it (cargo install s3s-fs@0.14.1)"
  cargo install s3s-fs@0.14.1 --features binary --locked
fi
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 \
    && ! command -v chromium-browser >/dev/null 2>&1; then
  echo "chromium not found on PATH: installing it (apt-get install chromium)"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium
fi
cargo test --workspace --locked "$@"
