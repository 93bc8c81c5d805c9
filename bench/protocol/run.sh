#!/usr/bin/env bash
# run.sh benchmarks deeplaked's protocol path against PostgreSQL 15 in one
# run, with pgx as the client: prepared and simple point queries,
# pipelined INSERTs, full reads in binary and text (see README.md).
#
#   bench/protocol/run.sh
#   BENCH_ROWS=20000 BENCH_QUERIES=5000 bench/protocol/run.sh    # quick run
#
# Environment:
#   BENCH_ROWS      rows of the table (default 100000)
#   BENCH_QUERIES   point queries / inserts per measurement (default 20000)
#   BENCH_DIR       where the throwaway directories go (default $TMPDIR or /tmp)
#   BENCH_MACHINE   machine description for the report
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
rows=${BENCH_ROWS:-100000}
queries=${BENCH_QUERIES:-20000}
pgbin=/usr/lib/postgresql/15/bin

log() { echo "$(date +%H:%M:%S)  $*" >&2; }

if [ ! -x "$pgbin/initdb" ]; then
	log "installing postgresql-15"
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql-15 >/dev/null
fi

work=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/deeplaked-protocol-bench.XXXXXX")
chmod 755 "$work"
dlpid=""
pgdata="$work/pg/data"

# PostgreSQL refuses to run as root: run it as postgres then.
as_pg() { "$@"; }
if [ "$(id -u)" -eq 0 ]; then
	id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
	as_pg() { runuser -u postgres -- "$@"; }
fi

cleanup() {
	set +e
	if [ -n "$dlpid" ] && kill -0 "$dlpid" 2>/dev/null; then
		kill -TERM "$dlpid"
		wait "$dlpid"
	fi
	if [ -f "$pgdata/postmaster.pid" ]; then
		as_pg "$pgbin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# free_port prints a TCP port of 127.0.0.1 that nothing listens on.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# 1. Build.
log "building deeplaked and the benchmark"
(cd "$repo" && go build -o "$work/deeplaked" ./cmd/deeplaked && go build -o "$work/protocolbench" ./bench/protocol)

# 2. A throwaway PostgreSQL 15 cluster, default settings (fsync on).
mkdir -p "$work/pg"
[ "$(id -u)" -eq 0 ] && chown postgres "$work/pg"
as_pg "$pgbin/initdb" -D "$pgdata" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
pgport=$(free_port)
as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$work/pg/log" -w \
	-o "-p $pgport -k $work/pg -c listen_addresses=127.0.0.1" start >/dev/null
pgpid=$(head -1 "$pgdata/postmaster.pid")
log "PostgreSQL on 127.0.0.1:$pgport (pid $pgpid)"

# 3. deeplaked.
dlport=$(free_port)
"$work/deeplaked" --listen "127.0.0.1:$dlport" --data-dir "$work/dl" 2>"$work/deeplaked.log" &
dlpid=$!
for _ in $(seq 100); do
	(exec 3<>"/dev/tcp/127.0.0.1/$dlport") 2>/dev/null && break
	sleep 0.1
done
log "deeplaked on 127.0.0.1:$dlport (pid $dlpid)"

machine=${BENCH_MACHINE:-"$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/^Mem:/ {print $2}') GB RAM"}

# 4. The measurements; the report goes to stdout.
"$work/protocolbench" -rows "$rows" -queries "$queries" -machine "$machine" \
	-dl "postgres://bench@127.0.0.1:$dlport/bench" \
	-pg "postgres://postgres@127.0.0.1:$pgport/postgres"
