# lib.sh holds what the benchmark scripts share: a throwaway work
# directory, a PostgreSQL 15 cluster and a deeplaked server on free
# 127.0.0.1 ports, stopped and removed on exit. Source it from a run.sh:
#
#   . "$(dirname "$0")/../lib.sh"
#   bench_init NAME      # $work; the cleanup trap
#   start_pg             # $pgdata, $pgport, $pgpid, $pgdsn, $pgsockdsn (Unix socket)
#   start_deeplaked BIN  # $dlport, $dlpid, $dldsn, $dlsockdsn (data in $work/dl)
#
# Environment: BENCH_DIR (where the work directory goes), BENCH_KEEP=1
# (keep deeplaked's data directory), BENCH_MACHINE (the machine line of
# the reports, $machine).

pgbin=/usr/lib/postgresql/15/bin
machine=${BENCH_MACHINE:-"$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/^Mem:/ {print $2}') GB RAM"}

log() { echo "$(date +%H:%M:%S)  $*" >&2; }

# PostgreSQL refuses to run as root: run it as postgres then.
as_pg() { "$@"; }
if [ "$(id -u)" -eq 0 ]; then
	id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
	as_pg() { runuser -u postgres -- "$@"; }
fi

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

# bench_init makes the work directory and installs the cleanup that stops
# both servers and removes it.
bench_init() {
	work=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/deeplaked-$1-bench.XXXXXX")
	chmod 755 "$work"
	dlpid=""
	pgdata="$work/pg/data"
	trap bench_cleanup EXIT
}

bench_cleanup() {
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

# start_pg starts a PostgreSQL 15 cluster with default settings (fsync
# on), installing postgresql-15 with apt first if it is missing.
start_pg() {
	if [ ! -x "$pgbin/initdb" ]; then
		log "installing postgresql-15"
		local sudo=""
		[ "$(id -u)" -ne 0 ] && sudo=sudo
		$sudo apt-get update -qq
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql-15 >/dev/null
	fi
	mkdir -p "$work/pg"
	[ "$(id -u)" -eq 0 ] && chown postgres "$work/pg"
	as_pg "$pgbin/initdb" -D "$pgdata" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
	pgport=$(free_port)
	as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$work/pg/log" -w \
		-o "-p $pgport -k $work/pg -c listen_addresses=127.0.0.1" start >/dev/null
	pgpid=$(head -1 "$pgdata/postmaster.pid")
	pgdsn="postgres://postgres@127.0.0.1:$pgport/postgres"
	pgsockdsn="host=$work/pg port=$pgport user=postgres dbname=postgres"
	log "PostgreSQL on 127.0.0.1:$pgport (pid $pgpid)"
}

# start_deeplaked starts the deeplaked binary $1 with its data in $work/dl
# and waits until it accepts connections.
start_deeplaked() {
	dlport=$(free_port)
	mkdir -p "$work/sock"
	"$1" --listen "127.0.0.1:$dlport" --data-dir "$work/dl" --unix-socket-dir "$work/sock" 2>"$work/deeplaked.log" &
	dlpid=$!
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$dlport") 2>/dev/null && break
		sleep 0.1
	done
	dldsn="postgres://bench@127.0.0.1:$dlport/bench"
	dlsockdsn="host=$work/sock port=$dlport user=bench dbname=bench"
	log "deeplaked on 127.0.0.1:$dlport and $work/sock/.s.PGSQL.$dlport (pid $dlpid)"
}
