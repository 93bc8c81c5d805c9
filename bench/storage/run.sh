#!/usr/bin/env bash
# run.sh benchmarks deeplaked's storage path against PostgreSQL 15 in one
# run: COPY ingest, full scans, bytes on disk (see README.md).
#
#   bench/storage/run.sh                       # N = 1,000,000 rows
#   BENCH_ROWS=100000 bench/storage/run.sh     # quick run
#
# Environment:
#   BENCH_ROWS          rows of the main table (default 1000000)
#   BENCH_VARIANT_ROWS  rows of each tokens-compression variant (default min(BENCH_ROWS, 200000))
#   BENCH_DIR           where the throwaway directories go (default $TMPDIR or /tmp)
#   BENCH_OUT           a directory to copy results.md and results.json into
#   BENCH_KEEP=1        keep deeplaked's data directory (for the Go benchmark BenchmarkEmbScan)
#   BENCH_MACHINE       machine description for the report
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
rows=${BENCH_ROWS:-1000000}
pgbin=/usr/lib/postgresql/15/bin

log() { echo "$(date +%H:%M:%S)  $*" >&2; }

if [ ! -x "$pgbin/initdb" ]; then
	log "installing postgresql-15"
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql-15 >/dev/null
fi

work=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/deeplaked-storage-bench.XXXXXX")
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
	if [ "${BENCH_KEEP:-}" = 1 ]; then
		rm -rf "$work/pg"
		log "kept $work (deeplaked data: $work/dl)"
	else
		rm -rf "$work"
	fi
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
(cd "$repo" && go build -o "$work/deeplaked" ./cmd/deeplaked && go build -o "$work/storagebench" ./bench/storage)

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

# 4. Ingest and scans over the wire.
"$work/storagebench" -phase wire -rows "$rows" -machine "$machine" \
	-dl "postgres://bench@127.0.0.1:$dlport/bench" -dl-pid "$dlpid" -dl-data "$work/dl" \
	-pg "postgres://postgres@127.0.0.1:$pgport/postgres" -pg-pid "$pgpid" \
	-out "$work/results.json"

# 5. Stop both, then read deeplaked's data directory with the storage layer.
kill -TERM "$dlpid"
wait "$dlpid" || { log "deeplaked exited with status $?; its log:"; tail -20 "$work/deeplaked.log" >&2; }
dlpid=""
as_pg "$pgbin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null
sync
"$work/storagebench" -phase local -dl-data "$work/dl" -in "$work/results.json" \
	-out "$work/results.json" -md "$work/results.md"

if [ -n "${BENCH_OUT:-}" ]; then
	mkdir -p "$BENCH_OUT"
	cp "$work/results.json" "$work/results.md" "$BENCH_OUT/"
	log "results in $BENCH_OUT"
fi
