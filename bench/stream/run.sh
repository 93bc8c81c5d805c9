#!/usr/bin/env bash
# run.sh runs the tensor-stream benchmark in one run (see README.md):
# uint8[3][64][64] images plus an int label streamed from deeplaked by the
# Python loader and by the Go client, and the anchors: the same rows read
# as bytea from PostgreSQL 15 with psycopg (COPY binary and a plain SELECT),
# from a local .npy with numpy.load(mmap_mode='r'), and the loopback TCP
# ceiling (one buffer sent again and again, distinct data, and the .npy
# file sent as a server sends stored data: read, checksummed and written,
# or by sendfile); then the deeplaked readers and PostgreSQL's over the
# servers' Unix sockets (deeplaked's through the socket, then through
# shared memory: SHARED_MEMORY), and that ceiling. Each result is one JSON line; a Markdown table and the
# ratios to the anchors follow.
#
#   bench/stream/run.sh                         # 200,000 rows, about 2.4 GB
#   BENCH_ROWS=20000 bench/stream/run.sh        # quick run
#
# Environment:
#   BENCH_ROWS    rows (default 200000)
#   BENCH_BATCH   batch size (default 256)
#   BENCH_DIR     where the throwaway directories go (default $TMPDIR or /tmp)
#   BENCH_MAP_SECONDS  seconds per mode of the single-row reads (default 10)
#   BENCH_PAIRS   rounds of the Go client alternated with the ceilings (default 5)
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
rows=${BENCH_ROWS:-200000}
batch=${BENCH_BATCH:-256}
py=/usr/bin/python3
. "$repo/bench/lib.sh"
bench_init stream

# 1. Build; the data: the images and labels as .npy files.
log "building deeplaked and the Go client"
(cd "$repo" && go build -o "$work/deeplaked" ./cmd/deeplaked && go build -o "$work/goclient" ./bench/stream/goclient &&
	go build -o "$work/loopback" ./bench/stream/loopback)
log "generating $rows rows"
"$py" "$repo/bench/stream/anchors.py" gen "$work" "$rows"

# 2. PostgreSQL 15 and deeplaked, loaded with the same rows: bytea in
# PostgreSQL, a uint8[3][64][64] column in deeplaked.
start_pg
log "loading PostgreSQL"
"$py" "$repo/bench/stream/anchors.py" load-pg "$pgdsn" "$work"
start_deeplaked "$work/deeplaked"
log "loading deeplaked"
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

# via_socket marks a JSON line as read over a Unix socket.
via_socket() {
	"$py" -c 'import json, sys
for l in sys.stdin:
    r = json.loads(l); r["name"] += ", Unix socket"; print(json.dumps(r), flush=True)'
}

# 3. The measurements, one JSON line each.
results="$work/results.jsonl"
log "deeplaked: Python loader"
server_rss env PYTHONPATH="$repo/python" "$py" "$repo/bench/stream/loader.py" "$dldsn" "$batch" | tee -a "$results"
log "deeplaked: Go client"
server_rss "$work/goclient" -dsn "$dldsn" -batch "$batch" | tee -a "$results"
log "deeplaked: Go client, shuffled (SHUFFLE true, then 'exact')"
server_rss "$work/goclient" -dsn "$dldsn" -batch "$batch" -shuffle buffer | tee -a "$results"
server_rss "$work/goclient" -dsn "$dldsn" -batch "$batch" -shuffle exact | tee -a "$results"
log "PostgreSQL: COPY binary"
"$py" "$repo/bench/stream/anchors.py" pg-copy "$pgdsn" "$batch" | tee -a "$results"
log "PostgreSQL: SELECT"
"$py" "$repo/bench/stream/anchors.py" pg-select "$pgdsn" "$batch" | tee -a "$results"
log ".npy"
"$py" "$repo/bench/stream/anchors.py" npy "$work" "$batch" | tee -a "$results"
log "loopback TCP"
"$work/loopback" -bytes $((rows * 12288)) | tee -a "$results"
log "loopback TCP, distinct data"
"$work/loopback" -distinct -bytes $((rows * 12288)) | tee -a "$results"
log "loopback TCP from the .npy file: read, CRC32C and write; sendfile"
"$work/loopback" -file "$work/images.npy" -bytes $((rows * 12288)) | tee -a "$results"
"$work/loopback" -file "$work/images.npy" -send sendfile -bytes $((rows * 12288)) | tee -a "$results"

# The Go client and the two loopback ceilings again, alternated for
# BENCH_PAIRS rounds (default 5): on a shared machine both move from one
# moment to the next by more than the gap to the target, so the ratio is
# taken within each round and the median reported.
pairs="$work/pairs.jsonl"
dlsockurl="postgres://bench@/bench?host=$work/sock&port=$dlport" # one word, for $cmd below
log "Go client and the loopback ceilings, alternated (${BENCH_PAIRS:-5} rounds)"
for round in $(seq "${BENCH_PAIRS:-5}"); do
	for cmd in "$work/goclient -dsn $dldsn -batch $batch" "$work/goclient -dsn $dlsockurl -batch $batch -shm" \
		"$work/loopback -bytes $((rows * 12288))" \
		"$work/loopback -distinct -bytes $((rows * 12288))" "$work/loopback -file $work/images.npy -bytes $((rows * 12288))"; do
		$cmd | "$py" -c 'import json, sys
r = json.loads(sys.stdin.read()); r["round"] = int(sys.argv[1]); print(json.dumps(r))' "$round" | tee -a "$pairs"
	done
done

# The same readers over the servers' Unix sockets, and that ceiling.
log "deeplaked over its Unix socket: Python loader, Go client; through the socket, then through shared memory (SHARED_MEMORY)"
server_rss env PYTHONPATH="$repo/python" "$py" "$repo/bench/stream/loader.py" "$dlsockdsn" "$batch" socket | via_socket | tee -a "$results"
server_rss "$work/goclient" -dsn "$dlsockdsn" -batch "$batch" | via_socket | tee -a "$results"
server_rss env PYTHONPATH="$repo/python" "$py" "$repo/bench/stream/loader.py" "$dlsockdsn" "$batch" | via_socket | tee -a "$results"
server_rss env PYTHONPATH="$repo/python" "$py" "$repo/bench/stream/loader.py" "$dlsockdsn" "$batch" copy | via_socket | tee -a "$results"
server_rss "$work/goclient" -dsn "$dlsockdsn" -batch "$batch" -shm | via_socket | tee -a "$results"
server_rss "$work/goclient" -dsn "$dlsockdsn" -batch "$batch" -shm -shuffle buffer | via_socket | tee -a "$results"
server_rss "$work/goclient" -dsn "$dlsockdsn" -batch "$batch" -shm -shuffle exact | via_socket | tee -a "$results"
log "PostgreSQL over its Unix socket: COPY binary, SELECT"
"$py" "$repo/bench/stream/anchors.py" pg-copy "$pgsockdsn" "$batch" | via_socket | tee -a "$results"
"$py" "$repo/bench/stream/anchors.py" pg-select "$pgsockdsn" "$batch" | via_socket | tee -a "$results"
log "Unix socket"
"$work/loopback" -network unix -bytes $((rows * 12288)) | tee -a "$results"

# Single rows by position: deeplaked's map-style dataset (by the primary
# key, by _rowid as a table without a key is read, and in storage order:
# LIMIT 1 OFFSET i, or a block of rows for consecutive reads), PostgreSQL
# by an index on id, the .npy; then
# batches of 64 random rows, as DataLoader(batch_size=64, shuffle=True)
# asks for them.
maps="$work/map.jsonl"
log "map-style reads: deeplaked, PostgreSQL, .npy (${BENCH_MAP_SECONDS:-10} s each mode)"
PYTHONPATH="$repo/python" "$py" "$repo/bench/stream/mapds.py" dl "$dldsn" "${BENCH_MAP_SECONDS:-10}" | tee -a "$maps"
"$py" "$repo/bench/stream/mapds.py" pg "$pgdsn" "${BENCH_MAP_SECONDS:-10}" | tee -a "$maps"
"$py" "$repo/bench/stream/mapds.py" npy "$work" "${BENCH_MAP_SECONDS:-10}" | tee -a "$maps"

# 4. The tables.
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
rate = {r["name"]: r["gb_per_s"] for r in rows}
def ratio(a, b, what):
    if a in rate and b in rate:
        print(f"- {what}: {rate[a] / rate[b]:.2f} ({rate[a]:.2f} / {rate[b]:.2f} GB/s)")
print()
go, py = "deeplaked, Go client (client/stream)", "deeplaked, Python loader (to_torch)"
ratio(go, "loopback TCP ceiling", "Go client / loopback TCP ceiling")
ratio(go, "loopback TCP ceiling, distinct data", "Go client / loopback TCP ceiling, distinct data")
ratio(go, "loopback TCP ceiling, from a file (pread, CRC32C, write)", "Go client / loopback TCP ceiling, from a file (pread, CRC32C, write)")
ratio(go, "loopback TCP ceiling, from a file (sendfile)", "Go client / loopback TCP ceiling, from a file (sendfile)")
ratio(py, "PostgreSQL 15, psycopg COPY (FORMAT binary)", "Python loader / psycopg COPY")
ratio(py, "PostgreSQL 15, psycopg SELECT", "Python loader / psycopg SELECT")
goshm, pyshm = go + ", SHARED_MEMORY, Unix socket", py + ", SHARED_MEMORY, Unix socket"
ratio(goshm, "loopback TCP ceiling", "Go client, SHARED_MEMORY / loopback TCP ceiling")
ratio(goshm, "loopback TCP ceiling, distinct data", "Go client, SHARED_MEMORY / loopback TCP ceiling, distinct data")
ratio(goshm, "Unix socket ceiling", "Go client, SHARED_MEMORY / Unix socket ceiling")
ratio(pyshm, "PostgreSQL 15, psycopg COPY (FORMAT binary)", "Python loader, SHARED_MEMORY / psycopg COPY")
ratio(pyshm, "PostgreSQL 15, psycopg COPY (FORMAT binary), Unix socket", "Python loader, SHARED_MEMORY / psycopg COPY over its Unix socket")
ratio(pyshm, "PostgreSQL 15, psycopg SELECT", "Python loader, SHARED_MEMORY / psycopg SELECT")
pycopy = py + ", SHARED_MEMORY, copied out, Unix socket"
ratio(pycopy, "PostgreSQL 15, psycopg COPY (FORMAT binary)", "Python loader, SHARED_MEMORY, batches copied out / psycopg COPY")
ratio(pycopy, "PostgreSQL 15, psycopg COPY (FORMAT binary), Unix socket", "Python loader, SHARED_MEMORY, batches copied out / psycopg COPY over its Unix socket")
PY
"$py" - "$pairs" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["round"], {})[r["name"]] = r["gb_per_s"]
go, one, dist = "deeplaked, Go client (client/stream)", "loopback TCP ceiling", "loopback TCP ceiling, distinct data"
shm = "deeplaked, Go client (client/stream), SHARED_MEMORY"
fromfile = "loopback TCP ceiling, from a file (pread, CRC32C, write)"
print("\nGo client (over TCP, and through shared memory) and the loopback ceilings, alternated\n")
print("| round | Go client GB/s | SHARED_MEMORY | ceiling | distinct | from a file | Go / ceiling | Go / distinct | Go / from a file | SHARED_MEMORY / ceiling | SHARED_MEMORY / distinct |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
r1, r2, r3, r4, r5 = [], [], [], [], []
for k in sorted(by):
    m = by[k]
    if go in m and shm in m and one in m and dist in m and fromfile in m:
        r1.append(m[go] / m[one]); r2.append(m[go] / m[dist]); r3.append(m[go] / m[fromfile])
        r4.append(m[shm] / m[one]); r5.append(m[shm] / m[dist])
        print(f"| {k} | {m[go]:.2f} | {m[shm]:.2f} | {m[one]:.2f} | {m[dist]:.2f} | {m[fromfile]:.2f} | {r1[-1]:.2f} | {r2[-1]:.2f} | {r3[-1]:.2f} | {r4[-1]:.2f} | {r5[-1]:.2f} |")
if r1:
    print(f"\n- median Go client / loopback TCP ceiling: {statistics.median(r1):.2f} (one buffer), {statistics.median(r2):.2f} (distinct data), "
          f"{statistics.median(r3):.2f} (from a file: read, CRC32C, write)")
    print(f"- median Go client through SHARED_MEMORY / loopback TCP ceiling: {statistics.median(r4):.2f} (one buffer), {statistics.median(r5):.2f} (distinct data)")
PY
"$py" - "$maps" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\nsingle rows by position\n")
print("| reader | random rows/s | in order rows/s | batches of 64 random rows, rows/s |")
print("| --- | ---: | ---: | ---: |")
rate = {}
for r in rows:
    rate.setdefault(r["name"], {})[r["mode"]] = r["rows_per_s"]
for name, m in rate.items():
    print(f"| {name} | {m.get('random', 0):.0f} | {m.get('in order', 0):.0f} | {m.get('batches of 64', 0):.0f} |")
pg = rate.get("PostgreSQL 15, psycopg SELECT by indexed id")
print()
for name in ("primary key", "_rowid", "storage order"):
    dl = rate.get("deeplaked, map-style dataset, " + name)
    if dl and pg:
        print(f"- map-style dataset ({name}) / PostgreSQL: random {dl['random'] / pg['random']:.2f}, in order {dl['in order'] / pg['in order']:.2f}, "
              f"batches of 64 {dl.get('batches of 64', 0) / pg.get('batches of 64', 1):.2f}")
PY
