#!/usr/bin/env bash
# Benchmark of the cluster across several hosts (network namespaces, as root): the 100 M-word
# count's shuffle throughput on 3 hosts (a JobManager and 2 TaskManagers x 32 slots, each in a
# namespace of its own) beside the same job on one host's loopback (`conflux cluster`), in one
# run; then the time from cutting a TaskManager off to the restart of its lost regions
# (heartbeats 200 ms / 1 s). Prints one line per measurement; the README's "Several hosts"
# numbers come from here.
#
#   scripts/hosts-bench.sh [RUNS]     (default 2 runs of each, alternating)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release --locked --bin conflux -p conflux-cli
cargo build --release --locked --bin conflux-hosts -p conflux-test-support
bin="$CARGO_TARGET_DIR/release"
work="$(mktemp -d /tmp/conflux-hosts-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$bin/conflux" generate wordcount --parallelism 64 --words-per-source 1562500 -o "$work/wc100m.json"
mbps() { python3 -c 'import json,sys; r=json.load(sys.stdin); d=r["data"] or {}; print(r["status"], "%.0f MB/s" % d.get("shuffle_mb_per_s", 0), "%.1f MB shuffled" % (d.get("shuffle_bytes", 0)/1e6), "heartbeat_timeouts", r["heartbeat_timeouts"], "max_heartbeat_rtt_ms", r["max_heartbeat_rtt_ms"])'; }
for i in $(seq "$runs"); do
  rm -rf "$work/out"
  printf 'run %s, 3 namespaces: ' "$i"
  "$bin/conflux-hosts" run "$work/wc100m.json" --conflux "$bin/conflux" --task-managers 2 --slots 32 \
    --jm --restart-attempts 10 --submit --output-dir "$work/out" 2>/dev/null | mbps
  rm -rf "$work/out"
  printf 'run %s, loopback:     ' "$i"
  "$bin/conflux" cluster "$work/wc100m.json" --task-managers 2 --slots 32 --restart-attempts 10 \
    --output-dir "$work/out" --verify --format json | mbps
done
rm -rf "$work/out"
echo "cut tm2 for 3 s, 2 s into the job (heartbeats 200 ms / 1 s):"
"$bin/conflux-hosts" run "$work/wc100m.json" --conflux "$bin/conflux" --task-managers 2 --slots 32 \
  --cut tm2 --cut-after-ms 2000 --cut-for-ms 3000 \
  --jm --restart-attempts 10 --heartbeat-interval-ms 200 --heartbeat-timeout-ms 1000 \
  --submit --output-dir "$work/out" 2> "$work/cut.log" | mbps
grep -E "restart of the lost regions|no restart" "$work/cut.log"
