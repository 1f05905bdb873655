#!/usr/bin/env bash
# Renders the README's plan viewer screenshot (docs/plan-viewer.png): starts `conflux serve` on
# a free loopback port, submits TPC-H q5 (Flink's JSON plan) and lets headless Chromium draw
# the page `/?plan=p1` with the HashAggregate vertex selected. Needs a built `conflux` (CONFLUX, default target/debug/conflux) and
# Chromium (CHROMIUM, default chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
conflux="${CONFLUX:-${CARGO_TARGET_DIR:-target}/debug/conflux}"
chromium="${CHROMIUM:-chromium}"
out="${1:-docs/plan-viewer.png}"
fifo="$(mktemp -u)"
mkfifo "$fifo"
"$conflux" serve --address 127.0.0.1:0 >"$fifo" 2>/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$fifo"' EXIT
exec 3<"$fifo"
read -r url <&3
curl -sf -X POST --data-binary @fixtures/flink-plans/tpch-q5.plan.json "$url/v1/plans" >/dev/null
profile="$(mktemp -d)"
"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
  --window-size=1500,1000 --virtual-time-budget=5000 --screenshot="$out" "$url/?plan=p1&select=a0ee7b14d617ba4d8109c408f52753c7" 2>/dev/null
rm -rf "$profile"
echo "wrote $out"
