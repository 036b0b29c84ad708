#!/usr/bin/env bash
# startup.sh: what starting uwf costs (issue 13, "Start-up that costs what Go costs"). See
# bench/README.md.
#
#   bench/startup.sh              # against main's commit 96c542b (before issue 13)
#   OLD=<commit> RUNS=300 STEPS=48 BENCH_DIR=/var/tmp bench/startup.sh
#
# It builds, in one temporary folder and with the same flags: a Go hello-world binary
# (fmt.Println), uwf from this tree ("new") and uwf from commit $OLD ("old", from git archive).
# Then, in the same run:
#   1. a runner (a small Go program, built here too) starts /bin/true, hello, floor (hello
#      blank-importing every package uwf links from outside this module: Go's cost with uwf's
#      dependencies), floor-release (the same, built as a release), old --version, new --version
#      and release --version (new built as README.md's Install says: CGO_ENABLED=0 -tags
#      urfave_cli_no_docs) $RUNS times each, interleaved (one of each per round, the order
#      rotating), timing each from fork to exit; it prints the medians and the ratios to hello.
#   2. the same runner times `uwf cas get <hash>` (old and new, interleaved) with
#      --log-level debug: the log's "command done since_main=" is the time from package main's
#      start to the command's end, so start-up (exec, the Go runtime, every package's init) is
#      the wall time minus it.
#   3. $STEPS `uwf thread step --agent synth` (old and new alternating, each on its own develop
#      threads, a new thread when one ends), timed and split the same way.
# Results: bench/out/startup.txt (and .tsv with every run). Compare ratios: the machine is shared.
set -euo pipefail

OLD=${OLD:-96c542b}
RUNS=${RUNS:-200}
STEPS=${STEPS:-40}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/bench/out
mkdir -p "$OUT"
WORK=$(mktemp -d "${BENCH_DIR:-/var/tmp}/uwf-startup.XXXXXX")
cleanup() { if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi; }
trap cleanup EXIT

# --- build: hello, the runner, new and old uwf --------------------------------------------
mkdir -p "$WORK/hello" "$WORK/runner" "$WORK/old"
cat >"$WORK/hello/main.go" <<'EOF'
package main

import "fmt"

func main() { fmt.Println("hello, world") }
EOF
cat >"$WORK/runner/main.go" <<'EOF'
// runner starts each command of a set in turn, rounds times (the order rotating each round),
// and prints per command the median wall time (fork to exit) and, when the command logged
// "since_main=<duration>" on stderr, the median of that and of wall minus it (start-up), in µs.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func main() {
	// usage: runner ROUNDS TSV < specs (one command a line: name<TAB>argv separated by tabs)
	rounds, _ := strconv.Atoi(os.Args[1])
	tsv, err := os.Create(os.Args[2])
	if err != nil {
		panic(err)
	}
	var names []string
	var argvs [][]string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		names, argvs = append(names, f[0]), append(argvs, f[1:])
	}
	sinceMain := regexp.MustCompile(`since_main=(\S+)`)
	wall := make([][]float64, len(names))
	inMain := make([][]float64, len(names))
	start := make([][]float64, len(names))
	for r := 0; r < rounds; r++ {
		for k := range names {
			i := (k + r) % len(names)
			cmd := exec.Command(argvs[i][0], argvs[i][1:]...)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			t0 := time.Now()
			err := cmd.Run()
			us := float64(time.Since(t0).Nanoseconds()) / 1000
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n%s", names[i], err, errb.String())
				os.Exit(1)
			}
			wall[i] = append(wall[i], us)
			m := "-"
			if sm := sinceMain.FindStringSubmatch(errb.String()); sm != nil {
				d, err := time.ParseDuration(sm[1])
				if err != nil {
					panic(err)
				}
				mu := float64(d.Nanoseconds()) / 1000
				inMain[i] = append(inMain[i], mu)
				start[i] = append(start[i], us-mu)
				m = fmt.Sprintf("%.0f", mu)
			}
			fmt.Fprintf(tsv, "%s\t%.0f\t%s\n", names[i], us, m)
		}
	}
	for i, n := range names {
		fmt.Printf("%s %.0f %.0f %.0f\n", n, median(wall[i]), median(inMain[i]), median(start[i]))
	}
}
EOF
(cd "$WORK/hello" && printf 'module hello\n\ngo 1.24\n' >go.mod && go build -o "$WORK/hello-bin" .)
(cd "$WORK/runner" && printf 'module runner\n\ngo 1.24\n' >go.mod && go build -o "$WORK/runner-bin" .)
(cd "$ROOT" && go build -o "$WORK/uwf-new" ./cmd/uwf)
# the release build (README.md, Install): static (CGO_ENABLED=0: no dynamic loader, no libc; the
# default links libc because package net has a cgo resolver) and without urfave/cli's man-page and
# markdown writers (whose markdown parser's init compiles regexps)
(cd "$ROOT" && CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$WORK/uwf-release" ./cmd/uwf)
# floor: hello-world that links (blank-imports) every package uwf links outside this module: what
# Go costs to start with uwf's dependencies (their init, the runtime over a binary that size).
FLOOR=$ROOT/bench/out/startup-floor
rm -rf "$FLOOR" && mkdir -p "$FLOOR"
{
	printf 'package main\n\nimport (\n\t"fmt"\n'
	(cd "$ROOT" && go list -deps ./cmd/uwf) | grep -vE '^(github.com/uncaged/uwf|vendor/)|(^|/)internal(/|$)|^(fmt|unsafe|runtime/cgo)$' |
		sed 's/.*/\t_ "&"/'
	printf ')\n\nfunc main() { fmt.Println("hello, world") }\n'
} >"$FLOOR/main.go"
(cd "$ROOT" && go build -o "$WORK/floor-bin" ./bench/out/startup-floor)
(cd "$ROOT" && CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$WORK/floor-release-bin" ./bench/out/startup-floor)
rm -rf "$FLOOR"
git -C "$ROOT" archive "$OLD" | tar -x -C "$WORK/old"
(cd "$WORK/old" && go build -o "$WORK/uwf-old" ./cmd/uwf)
for b in hello-bin floor-bin floor-release-bin uwf-old uwf-new uwf-release; do echo "$b: $(stat -c %s "$WORK/$b") bytes" >&2; done

med() { awk -v n="$1" '$1 == n {print $2, $3, $4}' "$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# --- 1. --version against hello and /bin/true ----------------------------------------------
printf '%s\t%s\n' true /bin/true hello "$WORK/hello-bin" floor "$WORK/floor-bin" floor-release "$WORK/floor-release-bin" >"$WORK/spec1"
printf '%s\t%s\t%s\n' old "$WORK/uwf-old" --version new "$WORK/uwf-new" --version release "$WORK/uwf-release" --version >>"$WORK/spec1"
"$WORK/runner-bin" "$RUNS" "$WORK/version.tsv" <"$WORK/spec1" >"$WORK/version.txt"

# --- 2. cas get, old and new, each on its own store -----------------------------------------
for v in old new; do
	H=$("$WORK/uwf-$v" --home "$WORK/home-get-$v" --durability none cas put-text "start-up")
	printf '%s\t%s\t--home\t%s\t--log-level\tdebug\tcas\tget\t%s\n' "$v" "$WORK/uwf-$v" "$WORK/home-get-$v" "$H" >>"$WORK/spec2"
done
"$WORK/runner-bin" "$RUNS" "$WORK/get.tsv" <"$WORK/spec2" >"$WORK/get.txt"

# --- 3. thread step, old and new alternating ------------------------------------------------
declare -A thread
for v in old new; do
	"$WORK/uwf-$v" --home "$WORK/home-step-$v" --durability none workflow put "$ROOT/examples/develop.yaml" >/dev/null
done
: >"$WORK/step.tsv"
for i in $(seq "$STEPS"); do
	for v in old new; do
		U=("$WORK/uwf-$v" --home "$WORK/home-step-$v" --durability none)
		if [[ -z ${thread[$v]:-} ]]; then
			thread[$v]=$("${U[@]}" thread start develop -p "task $i" --cwd "$WORK")
		fi
		t0=$EPOCHREALTIME
		"${U[@]}" --log-level debug thread step "${thread[$v]}" --agent synth >"$WORK/step.out" 2>"$WORK/step.err"
		t1=$EPOCHREALTIME
		wall=$(((${t1/./} - ${t0/./})))
		main=$(grep -oE 'since_main=[^ ]+' "$WORK/step.err" | sed 's/.*=//')
		echo "$v $wall $main" >>"$WORK/step.tsv"
		if grep -q '^[0-9]* done' "$WORK/step.out"; then thread[$v]=; fi
	done
done
to_us() { awk -v d="$1" 'BEGIN { n = d; u = d; sub(/[a-zµ]+$/, "", n); sub(/^[0-9.]+/, "", u)
	f = 1; if (u == "ns") f = 0.001; else if (u == "ms") f = 1000; else if (u == "s") f = 1000000
	printf "%.0f\n", n * f }'; }
median() { sort -n | awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
for v in old new; do
	w=$(awk -v v="$v" '$1 == v {print $2}' "$WORK/step.tsv" | median)
	m=$(awk -v v="$v" '$1 == v {print $3}' "$WORK/step.tsv" | while read -r d; do to_us "$d"; done | median)
	s=$(awk -v v="$v" '$1 == v {print $3, $2}' "$WORK/step.tsv" | while read -r d wl; do echo $((wl - $(to_us "$d"))); done | median)
	echo "$v $w $m $s" >>"$WORK/step.txt"
done

# --- report ---------------------------------------------------------------------------------
read -r true_w _ _ <<<"$(med true "$WORK/version.txt")"
read -r hello_w _ _ <<<"$(med hello "$WORK/version.txt")"
read -r oldv_w _ _ <<<"$(med old "$WORK/version.txt")"
read -r newv_w _ _ <<<"$(med new "$WORK/version.txt")"
{
	echo "start-up, $(date -u +%Y-%m-%dT%H:%MZ), old = $OLD, new = $(git -C "$ROOT" rev-parse --short HEAD) (+ working tree)"
	echo "medians in µs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	echo "1. $RUNS rounds of /bin/true, hello, floor (hello linking every package uwf links outside this module),"
	echo "   floor-release (the same built as a release), uwf --version old, new and release"
	echo "   (new built CGO_ENABLED=0 -tags urfave_cli_no_docs), interleaved"
	printf '%-28s %8s %10s %10s\n' command wall "x hello" "x true"
	for n in true hello floor floor-release old new release; do
		read -r w _ _ <<<"$(med "$n" "$WORK/version.txt")"
		printf '%-28s %8s %10s %10s\n' "$n" "$w" "$(ratio "$w" "$hello_w")" "$(ratio "$w" "$true_w")"
	done
	echo "new / old: $(ratio "$newv_w" "$oldv_w")"
	echo
	echo "2. $RUNS rounds of uwf cas get <hash>, old and new interleaved (in-main: package main's start to the end; start-up: the rest)"
	printf '%-6s %8s %8s %8s %14s\n' binary wall in-main start-up "start-up share"
	for n in old new; do
		read -r w m s <<<"$(med "$n" "$WORK/get.txt")"
		printf '%-6s %8s %8s %8s %14s\n' "$n" "$w" "$m" "$s" "$(awk -v s="$s" -v w="$w" 'BEGIN {printf "%.0f%%", 100 * s / w}')"
	done
	echo
	echo "3. $STEPS uwf thread step --agent synth each (develop.yaml, --durability none), old and new alternating"
	printf '%-6s %8s %8s %8s %14s\n' binary wall in-main start-up "start-up share"
	while read -r n w m s; do
		printf '%-6s %8s %8s %8s %14s\n' "$n" "$w" "$m" "$s" "$(awk -v s="$s" -v w="$w" 'BEGIN {printf "%.0f%%", 100 * s / w}')"
	done <"$WORK/step.txt"
} | tee "$OUT/startup.txt"
cat "$WORK/version.tsv" "$WORK/get.tsv" >"$OUT/startup.tsv"
sed 's/ /\t/g' "$WORK/step.tsv" | sed 's/^/step-/' >>"$OUT/startup.tsv"
