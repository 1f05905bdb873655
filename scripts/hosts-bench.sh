#!/usr/bin/env bash
# Benchmark of the cluster across several hosts (network namespaces, as root): the 100 M-word
# count's shuffle throughput on 3 hosts (a JobManager and 2 TaskManagers x 32 slots, each in a
# namespace of its own) beside the same job on one host's loopback (`conflux cluster`), in one
# run, alternating; then the time from cutting a TaskManager off to the restart of its lost
# regions (heartbeats 200 ms / 1 s, restart delay 1 s and 100 ms); then the TaskManagers' links
# limited to 10 MB/s (heartbeat round trip, no timeout). Every word count is verified. Prints one line per
# measurement and the load average before and after; the README's "Several hosts" numbers come
# from here.
#
#   scripts/hosts-bench.sh [RUNS]     (default 2 runs of each)
set -eu
cd "$(dirname "$0")/.."
runs="${1:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release --locked --bin conflux -p conflux-cli
cargo build --release --locked --bin conflux-hosts -p conflux-test-support
bin="$CARGO_TARGET_DIR/release"
work="$(mktemp -d /tmp/conflux-hosts-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$bin/conflux" generate wordcount --parallelism 64 --words-per-source 1562500 -o "$work/wc100m.json"
# One line of a JSON report: status, throughput, bytes, wall time, verification, heartbeats.
summary() {
  python3 -c '
import json, sys
r = json.load(sys.stdin)
d = r["data"] or {}
print(r["status"], "%.0f MB/s" % d.get("shuffle_mb_per_s", 0),
      "%.1f MB shuffled" % (d.get("shuffle_bytes", 0) / 1e6),
      "wall %.2f s" % (r["wall_ms"]["total"] / 1e3),
      "verified", d.get("output_verified"),
      "restarts", r["restarts"], "heartbeat_timeouts", r["heartbeat_timeouts"],
      "re_registrations", r["re_registrations"],
      "max_heartbeat_rtt_ms", r["max_heartbeat_rtt_ms"],
      "max_loss_to_redeploy_ms", r["max_loss_to_redeploy_ms"])'
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
  rm -rf "$work/out"
  printf 'run %s, 3 namespaces: ' "$i"
  "$bin/conflux-hosts" run "$work/wc100m.json" --conflux "$bin/conflux" --task-managers 2 --slots 32 \
    --jm --restart-attempts 10 --submit --output-dir "$work/out" --verify 2>/dev/null | summary || echo "no report"
  rm -rf "$work/out"
  printf 'run %s, loopback:     ' "$i"
  "$bin/conflux" cluster "$work/wc100m.json" --task-managers 2 --slots 32 --restart-attempts 10 \
    --output-dir "$work/out" --verify --format json 2>/dev/null | summary || echo "no report"
done
# Exponential delay (`--restart-attempts N` alone), as the tests: failures while a restart is
# pending join it, so the 32 tasks of the lost TaskManager cost one attempt. Its first delay is
# 1 s (the default) or 100 ms.
for delay in 1000 100; do
  for i in $(seq "$runs"); do
    rm -rf "$work/out"
    echo "run $i, tm2 cut for 3 s, 2 s after the submission (heartbeats 200 ms / 1 s, restart delay $delay ms):"
    "$bin/conflux-hosts" run "$work/wc100m.json" --conflux "$bin/conflux" --task-managers 2 --slots 32 \
      --cut tm2 --cut-after-ms 2000 --cut-for-ms 3000 \
      --jm --restart-attempts 10 --restart-delay-ms "$delay" \
      --heartbeat-interval-ms 200 --heartbeat-timeout-ms 1000 \
      --submit --output-dir "$work/out" --verify 2> "$work/cut.log" | summary || echo "no report"
    grep -E "took|declared lost|no TaskManager lost" "$work/cut.log" || true
  done
done
rm -rf "$work/out"
echo "TaskManagers' links limited to 10 MB/s (heartbeats 500 ms / 5 s):"
"$bin/conflux-hosts" run "$work/wc100m.json" --conflux "$bin/conflux" --task-managers 2 --slots 32 \
  --rate-limit 10000000 \
  --jm --restart-attempts 10 --heartbeat-interval-ms 500 --heartbeat-timeout-ms 5000 \
  --submit --output-dir "$work/out" --verify 2>/dev/null | summary || echo "no report"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
