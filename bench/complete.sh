#!/usr/bin/env bash
# complete.sh: what a shell completion costs (issue 17, item 4). See bench/README.md.
#
#   bench/complete.sh                     # 200 threads, 10 rounds of 10 runs per command
#   THREADS=1000 ROUNDS=20 BENCH_DIR=/var/tmp bench/complete.sh
#
# Builds uwf, registers the example workflow and starts $THREADS threads in a fresh home
# (disk store, durability none), then times, interleaved round by round, `uwf --version`
# (the floor: starting the process), `uwf __complete -- thread show ""` (what the completion
# scripts run to complete a thread id: every thread listed) and `uwf thread list` (which reads
# each thread's head). Prints the mean of each and the ratios; compare ratios, not times: the
# machine is shared.
set -euo pipefail

THREADS=${THREADS:-200}
ROUNDS=${ROUNDS:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/uwf-complete.XXXXXX")
trap 'rm -rf "$DIR"' EXIT

go build -C "$ROOT" -o "$DIR/uwf" ./cmd/uwf
export UWF_HOME=$DIR/home UWF_STORE= UWF_DURABILITY=none
U=$DIR/uwf
$U workflow put "$ROOT/examples/review-loop.yaml" >/dev/null
for i in $(seq "$THREADS"); do $U thread start review-loop -p "task $i" >/dev/null; done
[ "$($U __complete -- thread show "" | wc -l)" -eq "$THREADS" ] || { echo "complete.sh: __complete did not list every thread" >&2; exit 1; }

declare -A total=([version]=0 [complete]=0 [list]=0)
for _ in $(seq "$ROUNDS"); do
	for c in version complete list; do
		case $c in
		version) cmd=("$U" --version) ;;
		complete) cmd=("$U" __complete -- thread show "") ;;
		list) cmd=("$U" thread list) ;;
		esac
		start=$(date +%s%N)
		for _ in 1 2 3 4 5 6 7 8 9 10; do "${cmd[@]}" >/dev/null; done
		total[$c]=$((total[$c] + $(date +%s%N) - start))
	done
done
n=$((ROUNDS * 10))
for c in version complete list; do
	printf '%-40s %8d us\n' "$c" $((total[$c] / n / 1000))
done
awk -v v="${total[version]}" -v c="${total[complete]}" -v l="${total[list]}" -v t="$THREADS" 'BEGIN {
	printf "complete / version: %.2f    thread list / complete: %.2f    (%d threads)\n", c / v, l / c, t
}'
