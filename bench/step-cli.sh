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
			main=$(grep 'command done' "$work/step.err" | grep -oE 'since_main=[^ ]+' | sed 's/.*=//')
			if [ -n "$line" ]; then
				echo "$wall $(echo "$line" | grep -oE '(context|agent|extract|store|commit)=[^ ]+' | sed 's/.*=//' | tr '\n' ' ')$main"
			else
				echo "$wall - - - - - -" # a done mark
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
	for col in 1 2 3 4 5 6 7; do
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
read -r s_wall s_ctx s_agent s_extract s_store s_commit s_main <<<"$(report "$work/strict.all")"
read -r n_wall n_ctx n_agent n_extract n_store n_commit n_main <<<"$(report "$work/none.all")"
# The floor of starting a process, measured the same way: /bin/true, and uwf --version
# (exec, the Go runtime and every package's init, nothing of uwf's own).
floor() {
	for i in $(seq 15); do
		t0=$(now_ns); "$@" >/dev/null 2>&1 || true; t1=$(now_ns); echo $(((t1 - t0) / 1000))
	done | median
}
true_us=$(floor /bin/true)
version_us=$(floor "$work/uwf" --version)
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
	printf '%-8s %8s %8s %8s %8s %8s %8s %8s %8s\n' mode wall in-main context agent extract store commit start-up
	printf '%-8s %8s %8s %8s %8s %8s %8s %8s %8s\n' strict "$s_wall" "$s_main" "$s_ctx" "$s_agent" "$s_extract" "$s_store" "$s_commit" \
		"$(awk -v w="$s_wall" -v m="$s_main" 'BEGIN {print w - m}')"
	printf '%-8s %8s %8s %8s %8s %8s %8s %8s %8s\n' none "$n_wall" "$n_main" "$n_ctx" "$n_agent" "$n_extract" "$n_store" "$n_commit" \
		"$(awk -v w="$n_wall" -v m="$n_main" 'BEGIN {print w - m}')"
	echo "in-main: from package main's start to the command's end (store open, config, the step); start-up: the rest"
	echo "process floor, timed the same way: /bin/true $true_us µs, uwf --version $version_us µs"
	echo "fsyncs in one strict step (strace): $syncs calls, $sync_us µs in all"
	echo "strict - none (what durability costs, measured in this run): $(awk -v a="$s_wall" -v b="$n_wall" 'BEGIN {print a - b}') µs"
	echo "CLI's own time without fsyncs: wall $n_wall µs, of which in uwf's code (in-main) $n_main µs; target: under 10000 µs"
} | tee "$out/step-cli.txt"
