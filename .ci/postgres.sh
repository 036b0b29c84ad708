#!/usr/bin/env bash
# Start (or stop) a throw-away PostgreSQL server for the cas/postgres tests.
#
#   eval "$(.ci/postgres.sh)"        # or: eval "$(.ci/postgres.sh start)"
#   go test -race ./cas/postgres/...
#   .ci/postgres.sh stop             # uses $UWF_TEST_POSTGRES_DIR, or: .ci/postgres.sh stop DIR
#
# start installs PostgreSQL from Debian packages if it is missing (apt-get update, then apt-get
# install -y postgresql), initialises a cluster in a new temporary directory owned by the
# `postgres` user (PostgreSQL refuses to run as root), starts it on 127.0.0.1 on a free port with
# its socket in that directory, creates the database `uwf` owned by the superuser `uwf` (trust
# authentication: local and throw-away only), and prints, for eval:
#
#   export UWF_TEST_POSTGRES='postgres://uwf@127.0.0.1:PORT/uwf?sslmode=disable'
#   export UWF_TEST_POSTGRES_DIR='DIR'
#
# Everything else goes to stderr. stop stops that server and removes DIR; it is idempotent, so a
# trap may call it whatever happened. When not run as root, the server runs as the current user.
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

pg_bin() {
	local ver
	ver=$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -z "$ver" ] || [ ! -x "/usr/lib/postgresql/$ver/bin/initdb" ]; then
		return 1
	fi
	echo "/usr/lib/postgresql/$ver/bin"
}

# as_pg runs a command as the user that owns the cluster.
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

install_postgres() {
	if pg_bin >/dev/null; then
		return
	fi
	if [ "$(id -u)" != 0 ]; then
		log "PostgreSQL is not installed and this is not root: apt-get install -y postgresql"
		exit 1
	fi
	log "installing PostgreSQL from Debian packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >&2
	apt-get install -y postgresql >&2
}

port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start() {
	install_postgres
	local bin dir port
	bin=$(pg_bin)
	dir=$(mktemp -d "${TMPDIR:-/tmp}/uwf-postgres.XXXXXX")
	chmod 0755 "$dir"
	if [ "$(id -u)" = 0 ]; then
		chown postgres:postgres "$dir"
	fi
	log "initdb in $dir/data ($bin)"
	as_pg "$bin/initdb" -D "$dir/data" -A trust -U uwf -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }
	local tries=0
	while :; do
		port=$((20000 + RANDOM % 20000))
		tries=$((tries + 1))
		if port_free "$port" &&
			as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
				-o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300" start >&2; then
			break
		fi
		if [ "$tries" -ge 10 ]; then
			log "could not start PostgreSQL; its log:"
			cat "$dir/server.log" >&2 || true
			exit 1
		fi
		log "port $port failed, trying another"
	done
	"$bin/createdb" -h "$dir" -p "$port" -U uwf uwf >&2
	log "PostgreSQL $(basename "$(dirname "$bin")") listening on 127.0.0.1:$port (data in $dir)"
	echo "export UWF_TEST_POSTGRES='postgres://uwf@127.0.0.1:$port/uwf?sslmode=disable'"
	echo "export UWF_TEST_POSTGRES_DIR='$dir'"
}

stop() {
	local dir=${1:-${UWF_TEST_POSTGRES_DIR:-}}
	if [ -z "$dir" ]; then
		log "stop: no directory given and UWF_TEST_POSTGRES_DIR is unset; nothing to stop"
		return 0
	fi
	if [ -d "$dir/data" ]; then
		local bin
		if bin=$(pg_bin); then
			as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >&2 || true
		fi
	fi
	case "$dir" in
	*/uwf-postgres.*) rm -rf "$dir" ;;
	*) log "stop: not removing $dir (not made by this script)" ;;
	esac
}

case "${1:-start}" in
start) start ;;
stop) stop "${2:-}" ;;
*)
	echo "usage: $0 [start|stop [DIR]]" >&2
	exit 2
	;;
esac
