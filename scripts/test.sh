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
#   Flink 1.20.3  its CLI and Java 17, for the test that runs Flink's own client against the
#                 REST API (jars fetched from PyPI into $CONFLUX_CACHE, Java with apt-get; or
#                 FLINK_LIB_DIR=/path/to/deps/lib; CONFLUX_SKIP_FLINK=1 skips the download)
#   ZooKeeper     the coordination service of the high-availability tests (Debian's
#                 `zookeeper` package, Apache ZooKeeper 3.8, installed with apt-get where it
#                 exists; or ZOOKEEPER_JAR=/path/to/zookeeper.jar with its dependencies in its
#                 manifest; CONFLUX_SKIP_ZOOKEEPER=1 skips the install, and those tests say
#                 SKIPPED)
#   nft, ip, tc   nftables and iproute2, for the tests across several hosts (network namespaces,
#                 cli/tests/it/hosts.rs; installed with apt-get where missing; they also need
#                 root: without it, or without these, those tests print why they skip)
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

if [ "${CONFLUX_SKIP_ZOOKEEPER:-}" != 1 ] && [ -z "${ZOOKEEPER_JAR:-}" ] \
    && [ ! -f /usr/share/java/zookeeper.jar ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "ZooKeeper not found: installing it (apt-get install zookeeper)"
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    { $sudo apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends zookeeper; } \
      || echo "test.sh: apt-get could not install zookeeper: the high-availability tests are skipped (set ZOOKEEPER_JAR to run them)" >&2
  else
    echo "test.sh: no ZooKeeper and no apt-get to install it: the high-availability tests are skipped (install Apache ZooKeeper 3.8 and set ZOOKEEPER_JAR to run them)" >&2
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

# The tests across several hosts make network namespaces (as root) with iproute2's `ip` and
# `tc` and nftables' `nft`; each missing one is installed with apt-get where possible.
missing_net=""
if ! command -v nft >/dev/null 2>&1; then missing_net=" nftables"; fi
if ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
  missing_net="$missing_net iproute2"
fi
if [ -n "$missing_net" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "installing$missing_net for the tests across several hosts (apt-get)"
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    # shellcheck disable=SC2086 # the package names are words
    { $sudo apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing_net; } \
      || echo "test.sh: apt-get could not install$missing_net: the tests across several hosts say why they skip" >&2
  else
    echo "test.sh: no apt-get to install$missing_net: the tests across several hosts say why they skip" >&2
  fi
fi

# Flink's own CLI (runtime/tests/it/flink_cli.rs) needs Java 17 and Flink 1.20.3's jars.
# FLINK_LIB_DIR names the directory holding flink-dist-1.20.3.jar (the deps/lib directory of
# PyPI's `apache-flink-libraries==1.20.3` source package). When it is not set, the jars are
# fetched once from PyPI into $cache (about 230 MB downloaded, 200 MB kept) and Java is
# installed with apt-get where it exists; when either cannot be had, that test says SKIPPED
# and passes (CONFLUX_SKIP_FLINK=1 skips the download).
if [ -z "${FLINK_LIB_DIR:-}" ] && [ "${CONFLUX_SKIP_FLINK:-}" != 1 ]; then
  flink_lib="$cache/apache-flink-libraries-1.20.3/deps/lib"
  if [ ! -f "$flink_lib/flink-dist-1.20.3.jar" ]; then
    echo "Flink 1.20.3's jars not found: fetching apache-flink-libraries 1.20.3 from PyPI into $cache"
    mkdir -p "$cache"
    python3 - "$cache" <<'PY' || echo "test.sh: could not fetch Flink's jars: the Flink CLI test is skipped (set FLINK_LIB_DIR to run it)" >&2
import hashlib, html, pathlib, re, sys, tarfile, urllib.request
cache = pathlib.Path(sys.argv[1])
index = urllib.request.urlopen("https://pypi.org/simple/apache-flink-libraries/", timeout=60).read().decode()
url = html.unescape(re.search(r'href="([^"]*/apache[-_]flink[-_]libraries-1\.20\.3\.tar\.gz#sha256=[0-9a-f]+)"', index).group(1))
url, sha256 = url.split("#sha256=")
archive = cache / "apache-flink-libraries-1.20.3.tar.gz"
urllib.request.urlretrieve(url, archive)
digest = hashlib.sha256(archive.read_bytes()).hexdigest()
if digest != sha256:
    archive.unlink()
    sys.exit(f"sha256 {digest} of {url} is not PyPI's {sha256}")
with tarfile.open(archive) as tar:
    members = [m for m in tar.getmembers() if "/deps/lib/" in m.name and m.isfile()]
    try:
        tar.extractall(cache, members=members, filter="data")
    except TypeError:  # Python before 3.12 (and its backports) has no filter
        tar.extractall(cache, members=members)
archive.unlink()
PY
  fi
  if [ -f "$flink_lib/flink-dist-1.20.3.jar" ]; then export FLINK_LIB_DIR="$flink_lib"; fi
fi
if [ -n "${FLINK_LIB_DIR:-}" ] && ! command -v java >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  echo "java not found on PATH: installing it (apt-get install openjdk-17-jre-headless)"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  { $sudo apt-get update -qq \
      && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless; } \
    || echo "test.sh: apt-get could not install Java 17: the Flink CLI test is skipped" >&2
fi
cargo test --workspace --locked "$@"
