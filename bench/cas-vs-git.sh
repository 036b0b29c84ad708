#!/usr/bin/env bash
# cas-vs-git.sh: uwf's object store against git's, on the same files, in the
# same run. See bench/README.md.
#
#   bench/cas-vs-git.sh                 # 20,000 objects, 5 interleaved runs
#   N=5000 RUNS=3 bench/cas-vs-git.sh   # smaller
#   BENCH_DIR=/var/tmp bench/cas-vs-git.sh   # where the temporary files go
#   KEEP=1 bench/cas-vs-git.sh          # keep the temporary folder
#   OLD=<rev> bench/cas-vs-git.sh       # also time uwf built at <rev>, in the same runs
#
# Each run makes a fresh uwf store (--durability none) and a fresh git repo
# and times, on the same N files of about 1 KiB of JSON:
#   put: uwf cas put --batch <type>      vs  git hash-object -w --stdin-paths
#   get: uwf cas get --batch (verifies)  vs  git cat-file --batch --buffer
# The order of uwf and git alternates from run to run (with OLD, the three
# rotate). No run's files are deleted before the last run: on an ext4 without
# a journal (this VM's), every file creation checks each inode of its block
# group freed in the last 60 s (360 s while its inode-table block is dirty),
# so deleting 40,000 files between runs made the next run time the deletion
# too. Medians are printed as a table, then each run's ratios; raw timings
# go to bench/out/cas-vs-git-<time>.tsv. The machine is shared: compare the
# ratios, not the absolute times.
set -euo pipefail

N=${N:-20000}
RUNS=${RUNS:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/bench/out
BASE=${BENCH_DIR:-${TMPDIR:-/tmp}}
mkdir -p "$OUT"

WORK=$(mktemp -d "$BASE/uwf-bench.XXXXXX")
cleanup() { if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi; }
trap cleanup EXIT

fstype=$(df --output=fstype "$WORK" | tail -1 | tr -d ' ')
device=$(df --output=source "$WORK" | tail -1 | tr -d ' ')
if [[ $fstype == tmpfs || $fstype == ramfs ]]; then
	echo "cas-vs-git: $WORK is on $fstype; run on a real disk (set BENCH_DIR)" >&2
	exit 2
fi

# Build uwf (and the old one).
UWF=$WORK/uwf
(cd "$ROOT" && go build -o "$UWF" ./cmd/uwf)
if [[ -n ${OLD:-} ]]; then
	mkdir "$WORK/old-src"
	(cd "$ROOT" && git archive "$OLD") | tar -x -C "$WORK/old-src"
	(cd "$WORK/old-src" && go build -o "$WORK/uwf-old" ./cmd/uwf)
	rm -rf "$WORK/old-src"
fi

# N distinct JSON objects of about 1 KiB, one file each.
mkdir "$WORK/files"
awk -v n="$N" -v dir="$WORK/files" 'BEGIN {
	pad = ""
	for (k = 0; k < 15; k++) pad = pad "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for (i = 0; i < n; i++) {
		f = sprintf("%s/%05d.json", dir, i)
		printf "{\"id\": %d, \"name\": \"object %d\", \"tags\": [\"bench\", \"t%d\"], \"size\": %d, \"ok\": %s, \"text\": \"%s\"}\n", i, i, i % 97, i * 7, (i % 2 ? "true" : "false"), substr(pad, 1 + i % 40, 880) > f
		close(f)
	}
}'
(cd "$WORK/files" && ls) | sed "s|^|$WORK/files/|" >"$WORK/paths"
bytes=$(cat "$WORK"/files/* | wc -c)

cat >"$WORK/schema.json" <<'EOF'
{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}
EOF

now() { date +%s%N; }
# ms START END
ms() { echo "scale=1; ($2 - $1) / 1000000" | bc; }

TSV=$OUT/cas-vs-git-$(date +%Y%m%d-%H%M%S).tsv
printf 'run\ttool\top\tms\tcpu_ms\n' >"$TSV"

# timed OUT CMD...: runs CMD with stdout to OUT and stdin inherited; sets
# cpu_ms to the user + system CPU time it took (bash's time keyword).
timed() {
	local out=$1
	shift
	local TIMEFORMAT='%3U %3S'
	{ time "$@" >"$out" 2>"$WORK/stderr"; } 2>"$WORK/cpu" || { cat "$WORK/stderr" >&2; return 1; }
	cpu_ms=$(awk '{printf "%.0f", ($1 + $2) * 1000}' "$WORK/cpu")
}

put_uwf() { # run [old]
	local tool=uwf${2:+-old} bin=$UWF${2:+-old}
	local home=$WORK/$tool-$1
	"$bin" --home "$home" --durability none cas schema put "$WORK/schema.json" --name bench >/dev/null
	local t0 t1
	t0=$(now)
	timed "$WORK/$tool-$1.hashes" "$bin" --home "$home" --durability none cas put --batch bench <"$WORK/paths"
	t1=$(now)
	printf '%s\t%s\tput\t%s\t%s\n' "$1" "$tool" "$(ms "$t0" "$t1")" "$cpu_ms" >>"$TSV"
}
put_git() { # run
	local repo=$WORK/git-$1
	git init -q --bare "$repo"
	local t0 t1
	t0=$(now)
	timed "$WORK/git-$1.ids" git --git-dir="$repo" hash-object -w --stdin-paths <"$WORK/paths"
	t1=$(now)
	printf '%s\tgit\tput\t%s\t%s\n' "$1" "$(ms "$t0" "$t1")" "$cpu_ms" >>"$TSV"
}
get_uwf() { # run [old]
	local tool=uwf${2:+-old} bin=$UWF${2:+-old}
	local home=$WORK/$tool-$1
	local t0 t1
	t0=$(now)
	timed "$WORK/$tool-$1.got" "$bin" --home "$home" --durability none cas get --batch <"$WORK/$tool-$1.hashes"
	t1=$(now)
	printf '%s\t%s\tget\t%s\t%s\n' "$1" "$tool" "$(ms "$t0" "$t1")" "$cpu_ms" >>"$TSV"
}
get_git() { # run
	local repo=$WORK/git-$1
	local t0 t1
	t0=$(now)
	timed "$WORK/git-$1.got" git --git-dir="$repo" cat-file --batch --buffer <"$WORK/git-$1.ids"
	t1=$(now)
	printf '%s\tgit\tget\t%s\t%s\n' "$1" "$(ms "$t0" "$t1")" "$cpu_ms" >>"$TSV"
}
check() { # run: every object stored once and read back whole
	local r=$1
	[[ $(sort -u "$WORK/uwf-$r.hashes" | grep -c '^[0-9A-Z]\{13\}$') == "$N" ]] || { echo "run $r: uwf put did not return $N distinct hashes" >&2; exit 1; }
	[[ $(sort -u "$WORK/git-$r.ids" | wc -l) == "$N" ]] || { echo "run $r: git did not return $N distinct ids" >&2; exit 1; }
	if grep -qE '^[0-9A-Z]{13} (missing|corrupt)$|invalid$' "$WORK/uwf-$r.got"; then
		echo "run $r: uwf get --batch reported missing or corrupt objects" >&2
		exit 1
	fi
	[[ $(grep -cE '^[0-9A-Z]{13} [0-9]+$' "$WORK/uwf-$r.got") == "$N" ]] || { echo "run $r: uwf get --batch returned fewer than $N objects" >&2; exit 1; }
	[[ $(grep -c ' blob [0-9]*$' "$WORK/git-$r.got") == "$N" ]] || { echo "run $r: git cat-file returned fewer than $N objects" >&2; exit 1; }
	if [[ -n ${OLD:-} ]] && ! cmp -s "$WORK/uwf-$r.hashes" "$WORK/uwf-old-$r.hashes"; then
		echo "run $r: the old and new uwf returned different hashes" >&2
		exit 1
	fi
	# The stores stay until the end (see above); only the outputs go.
	rm -f "$WORK"/*-"$r".got
}

sync
for ((r = 1; r <= RUNS; r++)); do
	if [[ -n ${OLD:-} ]]; then
		case $((r % 3)) in
		1) put_uwf "$r"; put_uwf "$r" old; put_git "$r"; get_uwf "$r"; get_uwf "$r" old; get_git "$r" ;;
		2) put_uwf "$r" old; put_git "$r"; put_uwf "$r"; get_uwf "$r" old; get_git "$r"; get_uwf "$r" ;;
		0) put_git "$r"; put_uwf "$r"; put_uwf "$r" old; get_git "$r"; get_uwf "$r"; get_uwf "$r" old ;;
		esac
	elif ((r % 2)); then
		put_uwf "$r"; put_git "$r"; get_uwf "$r"; get_git "$r"
	else
		put_git "$r"; put_uwf "$r"; get_git "$r"; get_uwf "$r"
	fi
	check "$r"
	echo "run $r/$RUNS done" >&2
done

# Medians and the median of the per-run ratios (git time / uwf time: how
# many times faster uwf is; the target is >= 2).
report() {
	awk -F'\t' -v n="$N" -v bytes="$bytes" '
	function median(a, k,   i, j, t) {
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	NR > 1 { t[$3, $2, $1] = $4; c[$3, $2, $1] = $5; runs[$1] = 1; tools[$2] = 1 }
	END {
		k = 0
		for (r in runs) order[++k] = r + 0
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (order[j] < order[i]) { x = order[i]; order[i] = order[j]; order[j] = x }
		printf "%-4s %-8s %12s %12s %12s %12s %10s %8s %8s\n", "op", "uwf", "uwf ms", "git ms", "uwf obj/s", "git obj/s", "git/uwf", "min", "target"
		split("put get", ops, " ")
		split("uwf-old uwf", names, " ")
		for (o = 1; o <= 2; o++) {
			op = ops[o]
			for (w = 1; w <= 2; w++) {
				tool = names[w]
				if (!(tool in tools)) continue
				mn = 1e9
				for (i = 1; i <= k; i++) {
					r = order[i]; u[i] = t[op, tool, r]; g[i] = t[op, "git", r]; q[i] = g[i] / u[i]
					if (q[i] < mn) mn = q[i]
					ratios[op, tool] = ratios[op, tool] sprintf(" %.2f", q[i])
					cq[i] = c[op, "git", r] / c[op, tool, r]
					cpu[op, tool] = cpu[op, tool] sprintf(" %.2f", cq[i])
				}
				mu = median(u, k); mg = median(g, k); mq = median(q, k)
				printf "%-4s %-8s %12.1f %12.1f %12.0f %12.0f %9.2fx %7.2fx %8s\n", op, tool, mu, mg, n / mu * 1000, n / mg * 1000, mq, mn, (mn >= 2 ? "every>=2x" : "MISSED")
				cmed[op, tool] = median(cq, k)
			}
		}
		printf "(%d objects, %d bytes, %d runs; git/uwf is the median of the per-run ratios, min the lowest; target: every run >= 2x)\n", n, bytes, k
		for (o = 1; o <= 2; o++) for (w = 1; w <= 2; w++) if ((ops[o], names[w]) in ratios) {
			printf "per-run git/uwf, %s %s, wall:%s\n", ops[o], names[w], ratios[ops[o], names[w]]
			printf "per-run git/uwf, %s %s, CPU (user+sys):%s (median %.2fx)\n", ops[o], names[w], cpu[ops[o], names[w]], cmed[ops[o], names[w]]
		}
	}' "$TSV"
}

{
	echo "# cas-vs-git $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(nproc) cores, $device ($fstype)"
	echo "# uwf $(cd "$ROOT" && git rev-parse --short HEAD)${OLD:+ (uwf-old: $(cd "$ROOT" && git rev-parse --short "$OLD"))}$(cd "$ROOT" && git diff --quiet HEAD -- . ':!bench' || echo '+dirty'), $(git --version), load: $(cut -d' ' -f1-3 /proc/loadavg)"
	report
} | tee "${TSV%.tsv}.txt"
echo "raw: $TSV" >&2
