#!/bin/sh
# make.sh regenerates the version-1 fixtures of this folder with the uwf
# binary of commit fe9658e (the last build that writes format version 1 and
# knows no other). Run it from anywhere inside the repository's clone:
#
#   UWF_TEST_POSTGRES='postgres://uwf@127.0.0.1:5432/uwf?sslmode=disable' \
#     cmd/uwf/testdata/format-v1/make.sh
#
# It writes store.tar.gz (a disk store), export.tar.gz (uwf cas export of
# that store) and postgres.sql.gz (pg_dump of the same history written to a
# PostgreSQL schema named uwf_fixture_v1). The fixtures are data: never
# regenerate them to make a test pass. See README.md.
set -eu

COMMIT=fe9658e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

src=$work/src
mkdir -p "$src"
git -C "$repo" archive "$COMMIT" | tar -x -C "$src"
(cd "$src" && go build -o "$work/uwf" ./cmd/uwf)
uwf=$work/uwf

home=$work/home
mkdir -p "$home" "$work/cwd"
cat >"$home/config.yaml" <<'YAML'
agents:
  broken:
    command: sh
    args: [-c, 'echo "the agent broke" >&2; exit 1']
  asks:
    command: sh
    args: [-c, 'printf -- "---\nstatus: \$SUSPEND\nreason: Which database should I use?\n---\nI need a human.\n"']
YAML

# write runs the same history against the store given as $1.
write() {
	store=$1
	run() { "$uwf" --home "$home" --store "$store" --durability none "$@"; }
	run workflow put "$src/examples/review-loop.yaml" >/dev/null
	sed 's/^description: .*/description: Plan, implement, review until approved (v2)/' \
		"$src/examples/review-loop.yaml" >"$work/review-loop.yaml"
	run workflow put "$work/review-loop.yaml" >/dev/null
	sed -e 's/^name: .*/name: short/' -e 's/^maxSteps: .*/maxSteps: 2/' \
		"$src/examples/review-loop.yaml" >"$work/short.yaml"
	run workflow put "$work/short.yaml" >/dev/null
	printf '{"type":"string"}\n' >"$work/note.json"
	run cas schema put "$work/note.json" --name note >/dev/null
	run cas put note - <<'JSON' >/dev/null
"a user node"
JSON
	# done: a thread run to its end
	done=$(run thread run review-loop -p "Add a --json flag" --agent synth --cwd "$work/cwd" | sed -n 's/^thread //p')
	# forked: a fork of it at depth 2, stepped once
	forked=$(run thread fork "$done" --at 2)
	run thread step "$forked" --agent synth --seed 1 >/dev/null
	# failing: started, one step done, then a failed step (the agent exits 1)
	failing=$(run thread start review-loop -p "Fix the build" --cwd "$work/cwd")
	run thread step "$failing" --agent synth >/dev/null
	run thread step "$failing" --agent broken >/dev/null 2>&1 && exit 1
	# asked: suspended by an agent answering $SUSPEND
	asked=$(run thread start review-loop -p "Store the users" --cwd "$work/cwd")
	run thread step "$asked" --agent asks >/dev/null
	# capped: suspended at maxSteps
	run thread run short -p "Rename the package" --agent synth --cwd "$work/cwd" >/dev/null
	# killed
	killed=$(run thread start review-loop -p "Drop the cache" --cwd "$work/cwd")
	run thread kill "$killed" --reason "not needed" >/dev/null
	# resumed: suspended, then resumed with an answer (active)
	resumed=$(run thread start review-loop -p "Pick a queue" --cwd "$work/cwd")
	run thread step "$resumed" --agent asks >/dev/null
	run thread resume "$resumed" -p "Use PostgreSQL" >/dev/null
	# fresh: started only
	run thread start review-loop -p "Write the docs" --cwd "$work/cwd" >/dev/null
	run cas fsck >/dev/null
}

rm -f "$here/store.tar.gz" "$here/export.tar.gz" "$here/postgres.sql.gz"
write "$work/store"
"$uwf" --home "$home" --store "$work/store" cas export | gzip -n9 >"$here/export.tar.gz"
rm -rf "$work/store/tmp"/* "$work/store/locks"/*
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work" -cf - store | gzip -n9 >"$here/store.tar.gz"

if [ -n "${UWF_TEST_POSTGRES:-}" ]; then
	schema=uwf_fixture_v1
	psql -q -v ON_ERROR_STOP=1 "$UWF_TEST_POSTGRES" -c "DROP SCHEMA IF EXISTS $schema CASCADE"
	case $UWF_TEST_POSTGRES in *\?*) url="$UWF_TEST_POSTGRES&schema=$schema" ;; *) url="$UWF_TEST_POSTGRES?schema=$schema" ;; esac
	write "$url"
	pg_dump --no-owner --no-privileges --schema="$schema" "$UWF_TEST_POSTGRES" |
		grep -v -e '^-- Dumped' -e '^SET transaction_timeout' -e '^\\restrict' -e '^\\unrestrict' |
		gzip -n9 >"$here/postgres.sql.gz"
	psql -q -v ON_ERROR_STOP=1 "$UWF_TEST_POSTGRES" -c "DROP SCHEMA $schema CASCADE"
else
	echo "make.sh: UWF_TEST_POSTGRES is unset: postgres.sql.gz not written" >&2
fi
git -C "$repo" rev-parse "$COMMIT" >"$here/COMMIT"
