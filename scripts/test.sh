#!/usr/bin/env bash
# The test command (README): builds and runs every test of the workspace.
#
# Some tests need programs from outside Cargo's dependencies. This script installs each one
# that is missing, or, when it cannot, says what is needed and how to provide it, and skips
# only the tests that need it (every other test still runs):
#
#   s3s-fs        the S3-compatible test server the blob store's S3 tests start
#                 (installed with `cargo install s3s-fs@0.14.1 --features binary --locked`;
#                 or put one on PATH; CONFLUX_SKIP_S3=1 skips those tests)
#   Chromium      the browser the plan viewer's test drives headless (installed with
#                 `apt-get install chromium` where apt-get exists; or CHROMIUM=/path/to/chromium;
#                 CONFLUX_SKIP_BROWSER=1 skips that test)
#   schemathesis  the OpenAPI fuzzer run against `conflux serve` (installed with pip into
#                 $CONFLUX_CACHE/schemathesis, default ~/.cache/conflux/schemathesis; or
#                 SCHEMATHESIS=/path/to/st; CONFLUX_SKIP_SCHEMATHESIS=1 skips that test)
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${CONFLUX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conflux}"

skip() { # VARIABLE MESSAGE: skip the tests behind VARIABLE, saying why and what would help
  echo "test.sh: $2" >&2
  export "$1=1"
}

if [ "${CONFLUX_SKIP_S3:-}" != 1 ] && ! command -v s3s-fs >/dev/null 2>&1; then
  echo "s3s-fs not found on PATH: installing it (cargo install s3s-fs@0.14.1)"
  cargo install s3s-fs@0.14.1 --features binary --locked \
    || skip CONFLUX_SKIP_S3 "could not install s3s-fs: the S3 tests are skipped (put s3s-fs on PATH to run them)"
fi

if [ "${CONFLUX_SKIP_BROWSER:-}" != 1 ] && [ -z "${CHROMIUM:-}" ] \
    && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "chromium not found on PATH: installing it (apt-get install chromium)"
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    { $sudo apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium; } \
      || skip CONFLUX_SKIP_BROWSER "apt-get could not install chromium: the plan viewer's browser test is skipped (set CHROMIUM=/path/to/chromium to run it)"
  else
    skip CONFLUX_SKIP_BROWSER "no chromium and no apt-get to install it: the plan viewer's browser test is skipped (install Chromium, or set CHROMIUM=/path/to/chromium, to run it)"
  fi
fi

if [ "${CONFLUX_SKIP_SCHEMATHESIS:-}" != 1 ] && [ -z "${SCHEMATHESIS:-}" ]; then
  if command -v st >/dev/null 2>&1 && st --version 2>/dev/null | grep -q '^st, version'; then
    SCHEMATHESIS="$(command -v st)"
  else
    venv="$cache/schemathesis"
    if [ ! -x "$venv/bin/st" ]; then
      echo "schemathesis not found: installing it (pip install schemathesis into $venv)"
      { python3 -m venv "$venv" && "$venv/bin/pip" install -q 'schemathesis>=4,<5'; } \
        || { rm -rf "$venv"; true; }
    fi
    if [ -x "$venv/bin/st" ]; then
      SCHEMATHESIS="$venv/bin/st"
    else
      skip CONFLUX_SKIP_SCHEMATHESIS "could not install schemathesis (needs python3 with venv and pip): the OpenAPI fuzz test is skipped (set SCHEMATHESIS=/path/to/st to run it)"
    fi
  fi
  if [ -n "${SCHEMATHESIS:-}" ]; then export SCHEMATHESIS; fi
fi

cargo test --workspace --locked "$@"
