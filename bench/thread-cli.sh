#!/usr/bin/env bash
# thread-cli.sh: the uwf CLI on big threads. See bench/README.md.
#
#   bench/thread-cli.sh            # 5 runs of each command
#   RUNS=3 BENCH_DIR=/var/tmp bench/thread-cli.sh
#
# It builds uwf, has the thread package's benchmarks build their fixtures
# (UWF_BENCH_BIG=1 UWF_BENCH_KEEP=<dir>: a 1,000-step and a 100,000-step
# thread, and a store of 10,000 threads, all on disk), then times, in the
# same run:
#   uwf thread list --limit 50       on the store of 10,000 threads
#   uwf thread steps <thread>        on the 1,000- and the 100,000-step
#                                    thread, with the peak RSS of each
# Medians are printed as a table; raw figures go to
# bench/out/thread-cli-<time>.tsv. The machine is shared: compare ratios.
set -euo pipefail

RUNS=${RUNS:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/bench/out
BASE=${BENCH_DIR:-${TMPDIR:-/tmp}}
mkdir -p "$OUT"

WORK=$(mktemp -d "$BASE/uwf-thread-cli.XXXXXX")
cleanup() { if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi; }
trap cleanup EXIT

fstype=$(df --output=fstype "$WORK" | tail -1 | tr -d ' ')
if [[ $fstype == tmpfs || $fstype == ramfs ]]; then
	echo "thread-cli: $WORK is on $fstype; run on a real disk (set BENCH_DIR)" >&2
	exit 2
fi
[[ -x /usr/bin/time ]] || { echo "thread-cli: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

UWF=$WORK/uwf
(cd "$ROOT" && go build -o "$UWF" ./cmd/uwf)
echo "building fixtures in $WORK/fx (about a minute)..." >&2
(cd "$ROOT" && UWF_BENCH_BIG=1 UWF_BENCH_KEEP=$WORK/fx go test -run '^$' \
	-bench 'BenchmarkSteps|BenchmarkList/threads=10000' -benchtime 1x -timeout 30m ./thread/ >"$WORK/fixtures.log")

# The chain fixtures' thread is the ULID with time 1 and no entropy.
CHAIN_ID=00000000010000000000000000

TSV=$OUT/thread-cli-$(date +%Y%m%d-%H%M%S).tsv
printf 'run\tcommand\tms\tmaxrss_kb\n' >"$TSV"

# timed RUN NAME STORE ARGS...: time one uwf command, output discarded.
timed() {
	local run=$1 name=$2 store=$3
	shift 3
	/usr/bin/time -f '%e %M' -o "$WORK/time" "$UWF" --store "$store" --durability none "$@" >/dev/null
	read -r secs rss <"$WORK/time"
	printf '%s\t%s\t%s\t%s\n' "$run" "$name" "$(echo "$secs * 1000" | bc)" "$rss" >>"$TSV"
}

for ((r = 1; r <= RUNS; r++)); do
	timed "$r" "list-50-of-10000" "$WORK/fx/threads-10000" thread list --limit 50
	timed "$r" "steps-1000" "$WORK/fx/chain-1000" thread steps "$CHAIN_ID"
	timed "$r" "steps-100000" "$WORK/fx/chain-100000" thread steps "$CHAIN_ID"
	echo "run $r/$RUNS done" >&2
done

{
	echo "# thread-cli $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(nproc) cores, $(df --output=source "$WORK" | tail -1) ($fstype)"
	echo "# uwf $(cd "$ROOT" && git rev-parse --short HEAD), load: $(cut -d' ' -f1-3 /proc/loadavg)"
	awk -F'\t' '
	function median(a, k,   i, j, t) {
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	NR > 1 { k[$2]++; ms[$2, k[$2]] = $3; rss[$2, k[$2]] = $4 }
	END {
		printf "%-18s %10s %14s\n", "command", "median ms", "median maxRSS"
		split("list-50-of-10000 steps-1000 steps-100000", order, " ")
		for (o = 1; o <= 3; o++) {
			c = order[o]
			for (i = 1; i <= k[c]; i++) { a[i] = ms[c, i]; b[i] = rss[c, i] }
			m[c] = median(a, k[c]); r[c] = median(b, k[c])
			printf "%-18s %10.0f %11.1f MB\n", c, m[c], r[c] / 1024
		}
		printf "steps 100000/1000: time %.1fx, peak RSS %.2fx\n", m["steps-100000"] / m["steps-1000"], r["steps-100000"] / r["steps-1000"]
	}' "$TSV"
} | tee "${TSV%.tsv}.txt"
echo "raw: $TSV" >&2
