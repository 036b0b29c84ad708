#!/usr/bin/env bash
# step-flush.sh: a strict `uwf thread step` before and after the flush change
# (issue 13 item 3: 10 flushes per step down to 4, two of them extra
# syncfs(2) calls), quiet and while an unrelated process writes to the same
# filesystem. syncfs flushes the whole filesystem, so the second case is the
# one that could lose; see bench/README.md.
#
#   bench/step-flush.sh                 # 3 rounds x 2 loads x 2 binaries, one develop thread each
#   ROUNDS=5 bench/step-flush.sh
#   OLD=<rev> bench/step-flush.sh       # the "before" revision (default: the parent of the flush change)
#   BENCH_DIR=/var/tmp bench/step-flush.sh
#   DURABILITY=none bench/step-flush.sh # the steps without fsyncs (the flush counts stay strict's)
#
# Each round runs one develop.yaml thread (about 16 steps, built-in synth
# agent, --durability strict) to its end with each binary, the order
# alternating. The background writer, in the same folder tree, writes
# WRITE_MB (default 32) MiB of buffered data (no fsync) then sleeps 0.1 s,
# over and over, cycling through 8 files: up to a few hundred MiB/s of dirty
# pages, which every syncfs must write out (the old code made one syncfs per
# step too: its batch's). Medians of the
# per-step wall time and of the step's own store+commit time (from the debug
# log), and the ratios new/old; strace counts one step's flushes per binary.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
DURABILITY=${DURABILITY:-strict}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
WORK=$(mktemp -d -p "${BENCH_DIR:-/var/tmp}" uwf-step-flush.XXXXXX)
bgpid=
cleanup() { [[ -n $bgpid ]] && kill "$bgpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
fstype=$(df --output=fstype "$WORK" | tail -1 | tr -d ' ')
if [[ $fstype == tmpfs || $fstype == ramfs ]]; then
	echo "step-flush: $WORK is on $fstype; run on a real disk (set BENCH_DIR)" >&2
	exit 2
fi

if [[ -z ${OLD:-} ]]; then
	change=$(cd "$ROOT" && git log --format=%H -1 --grep '^cas/disk: a strict step makes 4 flushes')
	OLD=$(cd "$ROOT" && git rev-parse "$change^")
fi
mkdir "$WORK/old-src"
(cd "$ROOT" && git archive "$OLD") | tar -x -C "$WORK/old-src"
(cd "$WORK/old-src" && go build -o "$WORK/old" ./cmd/uwf)
(cd "$ROOT" && go build -o "$WORK/new" ./cmd/uwf)

now_ns() { date +%s%N; }
to_us() { # a Go duration -> microseconds
	awk -v d="$1" 'BEGIN { n = d; u = d; sub(/[a-zµ]+$/, "", n); sub(/^[0-9.]+/, "", u)
		f = 1; if (u == "ns") f = 0.001; else if (u == "ms") f = 1000; else if (u == "s") f = 1000000
		printf "%.0f\n", n * f }'
}

# thread BIN LOAD ROUND: one develop thread to its end; appends
# "bin load wall_us store_us commit_us" per step to $WORK/steps.
thread() {
	local bin=$1 load=$2 round=$3 home=$WORK/home-$1-$2-$3
	local U=("$WORK/$bin" --home "$home" --durability "$DURABILITY")
	"${U[@]}" workflow put "$ROOT/examples/develop.yaml" >/dev/null
	local id t0 t1 line
	id=$("${U[@]}" thread start develop -p "task $round" --cwd "$WORK")
	while :; do
		t0=$(now_ns)
		"${U[@]}" --log-level debug thread step "$id" --agent synth >"$WORK/step.out" 2>"$WORK/step.err" || break
		t1=$(now_ns)
		line=$(grep 'step timings' "$WORK/step.err" || true)
		if [[ -n $line ]]; then
			echo "$bin $load $(((t1 - t0) / 1000)) $(to_us "$(echo "$line" | grep -oE 'store=[^ ]+' | cut -d= -f2)") $(to_us "$(echo "$line" | grep -oE 'commit=[^ ]+' | cut -d= -f2)")" >>"$WORK/steps"
		fi
		grep -q '^[0-9]* done' "$WORK/step.out" && break
	done
	rm -rf "$home"
}

WRITE_MB=${WRITE_MB:-32}
writer() { # buffered writes into the same tree, until killed; counts MiB written
	mkdir -p "$WORK/bg"
	local mb=0
	while :; do
		for k in 0 1 2 3 4 5 6 7; do
			dd if=/dev/zero of="$WORK/bg/f$k" bs=1M count="$WRITE_MB" status=none
			mb=$((mb + WRITE_MB))
			echo "$mb" >"$WORK/bg.mb"
			sleep 0.1
		done
	done
}

: >"$WORK/steps"
for load in quiet writer; do
	if [[ $load == writer ]]; then
		writer &
		bgpid=$!
		sleep 1
		t_bg=$(now_ns)
	fi
	for ((r = 1; r <= ROUNDS; r++)); do
		if ((r % 2)); then thread old "$load" "$r"; thread new "$load" "$r"; else thread new "$load" "$r"; thread old "$load" "$r"; fi
		echo "$load round $r/$ROUNDS done" >&2
	done
	if [[ -n $bgpid ]]; then
		kill "$bgpid"; wait "$bgpid" 2>/dev/null || true; bgpid=
		bg_rate=$(awk -v mb="$(cat "$WORK/bg.mb")" -v ns=$(($(now_ns) - t_bg)) 'BEGIN {printf "%.0f", mb / (ns / 1e9)}')
	fi
done

# One strict step of each binary under strace: its flushes.
flushes() {
	local home=$WORK/home-strace-$1
	local U=("$WORK/$1" --home "$home" --durability strict)
	"${U[@]}" workflow put "$ROOT/examples/develop.yaml" >/dev/null
	local id
	id=$("${U[@]}" thread start develop -p strace --cwd "$WORK")
	"${U[@]}" thread step "$id" --agent synth >/dev/null
	strace -f -e trace=fsync,fdatasync,syncfs -o "$WORK/strace-$1" "${U[@]}" thread step "$id" --agent synth >/dev/null
	grep -cE '(fsync|fdatasync|syncfs)\(' "$WORK/strace-$1" || true
}
f_old=- f_new=-
if command -v strace >/dev/null; then f_old=$(flushes old); f_new=$(flushes new); fi

TXT=$OUT/step-flush-$(date +%Y%m%d-%H%M%S).txt
cp "$WORK/steps" "${TXT%.txt}.raw"
{
	echo "# step-flush $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -sr), $(nproc) cores, $fstype, durability $DURABILITY; old $(cd "$ROOT" && git rev-parse --short "$OLD"), new $(cd "$ROOT" && git rev-parse --short HEAD); load: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# flushes in one strict step (strace): old $f_old, new $f_new; the background writer wrote about $bg_rate MiB/s (${WRITE_MB} MiB bursts)"
	awk '
	function median(a, k,   i, j, t) {
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	{ k = ++n[$1, $2]; w[$1, $2, k] = $3; s[$1, $2, k] = $4 + $5 }
	END {
		printf "%-7s %6s %12s %12s %16s %16s %10s %10s\n", "load", "steps", "old wall µs", "new wall µs", "old store+commit", "new store+commit", "wall n/o", "s+c n/o"
		split("quiet writer", loads, " ")
		for (l = 1; l <= 2; l++) {
			ld = loads[l]
			for (b = 1; b <= 2; b++) {
				bin = b == 1 ? "old" : "new"
				delete aw; delete as
				for (i = 1; i <= n[bin, ld]; i++) { aw[i] = w[bin, ld, i]; as[i] = s[bin, ld, i] }
				mw[bin] = median(aw, n[bin, ld]); ms[bin] = median(as, n[bin, ld])
			}
			printf "%-7s %6d %12.0f %12.0f %16.0f %16.0f %9.2fx %9.2fx\n", ld, n["new", ld], mw["old"], mw["new"], ms["old"], ms["new"], mw["new"] / mw["old"], ms["new"] / ms["old"]
		}
		print "(medians per step; n/o = new / old: under 1 is faster)"
	}' "$WORK/steps"
} | tee "$TXT"
