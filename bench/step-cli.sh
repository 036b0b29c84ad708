#!/usr/bin/env bash
# The CLI's own time per `uwf thread step` (issue: "Running threads", performance).
#
# The agent answers instantly (the built-in synth agent), the store is on disk, durability strict.
# Every `uwf thread step` of several develop.yaml threads (about 16 steps each) is timed, and the
# same sequence is run again with --durability none in the same run: the difference is what the
# fsyncs cost, and the none run is the CLI's own time. strace counts the fsyncs of one step and
# measures each. --log-level debug gives the library's breakdown of each step (context build,
# agent, extraction, writes, commit); start-up is the rest (exec, store open, config, exit).
#
#   bench/step-cli.sh [threads]        (default 6 threads; results in bench/out/step-cli.txt)
#
# Run it on a real disk (not tmpfs): BENCH_DIR picks the folder (default /var/tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-6}
out=bench/out
mkdir -p "$out"
work=$(mktemp -d -p "${BENCH_DIR:-/var/tmp}" uwf-step-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "filesystem: $(df -T "$work" | awk 'NR==2 {print $1, $2}')" >&2
go build -o "$work/uwf" ./cmd/uwf

now_ns() { date +%s%N; }

# run_mode MODE: steps $threads develop threads to their end, one `thread step` per invocation;
# prints "wall_ms context_ms agent_ms extract_ms store_ms commit_ms" per step.
run_mode() {
	local mode=$1 home="$work/home-$1"
	local U=("$work/uwf" --home "$home" --durability "$mode")
	"${U[@]}" workflow put examples/develop.yaml >/dev/null
	for t in $(seq "$threads"); do
		id=$("${U[@]}" thread start develop -p "task $t" --cwd "$work")
		while :; do
			t0=$(now_ns)
			"${U[@]}" --log-level debug thread step "$id" --agent synth >"$work/step.out" 2>"$work/step.err" || break
			t1=$(now_ns)
			wall=$(((t1 - t0) / 1000))
			# step timings from the debug log (Go durations: 1.2ms, 350µs, 2s)
			line=$(grep 'step timings' "$work/step.err" || true)
			if [ -n "$line" ]; then
				echo "$wall $(echo "$line" | grep -oE '(context|agent|extract|store|commit)=[^ ]+' | sed 's/.*=//' | tr '\n' ' ')"
			else
				echo "$wall - - - - -" # a done mark
			fi
			grep -q '^[0-9]* done' "$work/step.out" && break
		done
	done
}

to_us() { # a Go duration -> microseconds
	awk -v d="$1" 'BEGIN {
		if (d == "-") { print "-"; exit }
		n = d; u = d; sub(/[a-zµ]+$/, "", n); sub(/^[0-9.]+/, "", u)
		f = 1; if (u == "ns") f = 0.001; else if (u == "µs" || u == "us") f = 1; else if (u == "ms") f = 1000; else if (u == "s") f = 1000000
		printf "%.0f\n", n * f }'
}

median() { sort -n | awk '{a[NR] = $1} END { if (NR == 0) { print "-"; exit } if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

report() { # file: columns in µs, step lines only
	local f=$1
	for col in 1 2 3 4 5 6; do
		awk -v c="$col" '$2 != "-" {print $c}' "$f" | while read -r v; do
			if [ "$col" = 1 ]; then echo "$v"; else to_us "$v"; fi
		done | median
	done | tr '\n' ' '
}

: >"$out/step-cli.txt"
for round in 1 2; do
	for mode in strict none; do
		run_mode "$mode" >"$work/$mode.raw"
		cat "$work/$mode.raw" >>"$work/$mode.all"
		rm -rf "$work/home-$mode"
	done
done
read -r s_wall s_ctx s_agent s_extract s_store s_commit <<<"$(report "$work/strict.all")"
read -r n_wall n_ctx n_agent n_extract n_store n_commit <<<"$(report "$work/none.all")"
steps=$(awk '$2 != "-"' "$work/strict.all" | wc -l)

# The fsync floor: strace one strict step and sum its fsync-family calls.
home="$work/home-strace"
U=("$work/uwf" --home "$home" --durability strict)
"${U[@]}" workflow put examples/develop.yaml >/dev/null
id=$("${U[@]}" thread start develop -p "strace" --cwd "$work")
"${U[@]}" thread step "$id" --agent synth >/dev/null
strace -f -T -e trace=fsync,fdatasync,syncfs -o "$work/strace.txt" "${U[@]}" thread step "$id" --agent synth >/dev/null
syncs=$(grep -cE '(fsync|fdatasync|syncfs)\(' "$work/strace.txt" || true)
sync_us=$(grep -oE '<[0-9.]+>' "$work/strace.txt" | tr -d '<>' | awk '{s += $1} END {printf "%.0f", s * 1000000}')

{
	echo "uwf thread step, develop.yaml, synth agent, $steps steps per mode (2 rounds of $threads threads), medians in µs"
	printf '%-8s %8s %8s %8s %8s %8s %8s %8s\n' mode wall context agent extract store commit start-up
	printf '%-8s %8s %8s %8s %8s %8s %8s %8s\n' strict "$s_wall" "$s_ctx" "$s_agent" "$s_extract" "$s_store" "$s_commit" \
		"$(awk -v w="$s_wall" -v a="$s_ctx" -v b="$s_agent" -v c="$s_extract" -v d="$s_store" -v e="$s_commit" 'BEGIN {print w - a - b - c - d - e}')"
	printf '%-8s %8s %8s %8s %8s %8s %8s %8s\n' none "$n_wall" "$n_ctx" "$n_agent" "$n_extract" "$n_store" "$n_commit" \
		"$(awk -v w="$n_wall" -v a="$n_ctx" -v b="$n_agent" -v c="$n_extract" -v d="$n_store" -v e="$n_commit" 'BEGIN {print w - a - b - c - d - e}')"
	echo "fsyncs in one strict step (strace): $syncs calls, $sync_us µs in all"
	echo "strict - none (what durability costs, measured in this run): $(awk -v a="$s_wall" -v b="$n_wall" 'BEGIN {print a - b}') µs"
	echo "CLI's own time (the none run, no fsyncs): $n_wall µs; target: under 10000 µs"
} | tee "$out/step-cli.txt"
