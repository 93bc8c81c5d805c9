#!/usr/bin/env bash
# run.sh runs the tensor-stream benchmark in one run (see README.md):
# uint8[3][64][64] images plus an int label streamed from deeplaked by the
# Python loader and by the Go client, and the anchors: the same rows read
# as bytea from PostgreSQL 15 with psycopg (COPY binary and a plain SELECT),
# from a local .npy with numpy.load(mmap_mode='r'), and the loopback TCP
# ceiling. Each result is one JSON line; a Markdown table follows.
#
#   bench/stream/run.sh                         # 200,000 rows, about 2.4 GB
#   BENCH_ROWS=20000 bench/stream/run.sh        # quick run
#
# Environment:
#   BENCH_ROWS    rows (default 200000)
#   BENCH_BATCH   batch size (default 256)
#   BENCH_DIR     where the throwaway directories go (default $TMPDIR or /tmp)
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
rows=${BENCH_ROWS:-200000}
batch=${BENCH_BATCH:-256}
py=/usr/bin/python3
pgbin=/usr/lib/postgresql/15/bin

log() { echo "$(date +%H:%M:%S)  $*" >&2; }

if [ ! -x "$pgbin/initdb" ]; then
	log "installing postgresql-15"
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql-15 >/dev/null
fi

work=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/deeplaked-stream-bench.XXXXXX")
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


# 1. Build; the data: the images and labels as .npy files.
log "building deeplaked and the Go client"
(cd "$repo" && go build -o "$work/deeplaked" ./cmd/deeplaked && go build -o "$work/goclient" ./bench/stream/goclient)
log "generating $rows rows"
chmod 755 "$work"
"$py" "$repo/bench/stream/anchors.py" gen "$work" "$rows"

# 2. A throwaway PostgreSQL 15 cluster, default settings, loaded with the rows.
mkdir -p "$work/pg"
[ "$(id -u)" -eq 0 ] && chown postgres "$work/pg"
as_pg "$pgbin/initdb" -D "$pgdata" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
pgport=$(free_port)
as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$work/pg/log" -w \
	-o "-p $pgport -k $work/pg -c listen_addresses=127.0.0.1" start >/dev/null
pgdsn="postgresql://postgres@127.0.0.1:$pgport/postgres"
log "loading PostgreSQL on 127.0.0.1:$pgport"
"$py" "$repo/bench/stream/anchors.py" load-pg "$pgdsn" "$work"

# 3. deeplaked, loaded with the same rows as a uint8[3][64][64] column.
dlport=$(free_port)
"$work/deeplaked" --listen "127.0.0.1:$dlport" --data-dir "$work/dl" 2>"$work/deeplaked.log" &
dlpid=$!
for _ in $(seq 100); do
	(exec 3<>"/dev/tcp/127.0.0.1/$dlport") 2>/dev/null && break
	sleep 0.1
done
dldsn="postgresql://bench@127.0.0.1:$dlport/bench"
log "loading deeplaked on 127.0.0.1:$dlport"
"$py" "$repo/bench/stream/anchors.py" load-dl "$dldsn" "$work"

# server_rss runs a deeplaked reader while sampling the server's resident
# memory every 100 ms, and adds the first and the largest sample to the
# reader's JSON line.
server_rss() {
	local log="$work/rss.$RANDOM"
	( while kill -0 "$dlpid" 2>/dev/null; do awk '/^VmRSS/ {print $2}' "/proc/$dlpid/status"; sleep 0.1; done ) >"$log" &
	local sampler=$!
	local line
	line=$("$@")
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	"$py" -c 'import json, sys
r = json.loads(sys.argv[1]); s = [int(x) for x in open(sys.argv[2]) if x.strip()]
r["server_rss_start_mb"], r["server_rss_peak_mb"] = s[0] / 1024, max(s) / 1024
print(json.dumps(r))' "$line" "$log"
}

# 4. The measurements, one JSON line each.
results="$work/results.jsonl"
log "deeplaked: Python loader"
server_rss env PYTHONPATH="$repo/python" "$py" "$repo/bench/stream/loader.py" "$dldsn" "$batch" | tee -a "$results"
log "deeplaked: Go client"
server_rss "$work/goclient" -dsn "$dldsn" -batch "$batch" | tee -a "$results"
log "PostgreSQL: COPY binary"
"$py" "$repo/bench/stream/anchors.py" pg-copy "$pgdsn" "$batch" | tee -a "$results"
log "PostgreSQL: SELECT"
"$py" "$repo/bench/stream/anchors.py" pg-select "$pgdsn" "$batch" | tee -a "$results"
log ".npy"
"$py" "$repo/bench/stream/anchors.py" npy "$work" "$batch" | tee -a "$results"
log "loopback TCP"
(cd "$repo" && go run ./bench/stream/loopback -bytes $((rows * 12288))) | tee -a "$results"

# 5. The table.
"$py" - "$results" "$rows" "$batch" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"\n{sys.argv[2]} rows of uint8[3][64][64] + int label, batches of {sys.argv[3]}\n")
print("| reader | GB/s | samples/s | first batch | peak memory (reader) | server memory (start → peak) |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    samples = f"{r['samples_per_s']:.0f}" if "samples_per_s" in r else ""
    first = r.get("first_batch_ms", r.get("first_bytes_ms"))
    mem = f"{r['peak_rss_mb']:.0f} MB" if "peak_rss_mb" in r else ""
    srv = f"{r['server_rss_start_mb']:.0f} → {r['server_rss_peak_mb']:.0f} MB" if "server_rss_peak_mb" in r else ""
    print(f"| {r['name']} | {r['gb_per_s']:.2f} | {samples} | {first:.1f} ms | {mem} | {srv} |")
PY
