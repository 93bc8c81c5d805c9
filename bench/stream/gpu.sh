#!/usr/bin/env bash
# gpu.sh runs the tensor stream into a CUDA GPU (see README.md, "Into a
# GPU"): the benchmark's rows (uint8[3][64][64] plus an int label) streamed
# by the Python loader with to_torch(device="cuda"), through SHARED_MEMORY
# and over TCP, every row checked on the device; beside them the
# host-to-device copy ceiling, the same copies from a registered shared
# area, the local .npy read into the GPU as a plain PyTorch loop does, and
# the Go client with the loopback TCP ceilings, alternated. On a machine
# without CUDA it stops at once.
#
#   bench/stream/gpu.sh                      # 200,000 rows, about 2.4 GB
#   BENCH_ROWS=20000 bench/stream/gpu.sh     # quick run
#
# Environment (besides bench/lib.sh's):
#   BENCH_ROWS, BENCH_BATCH   as run.sh's (200000, 256)
#   BENCH_ROUNDS   rounds of the loader's modes, alternated (default 3)
#   BENCH_GO_ROUNDS  rounds of the Go client and the loopback ceilings (default BENCH_ROUNDS)
#   BENCH_PYTHON   the Python with a CUDA build of torch, numpy and psycopg 3
#                  (default python3 from PATH)
#   BENCH_BIN      a directory holding deeplaked, goclient and loopback built
#                  beforehand (go build ./cmd/deeplaked ./bench/stream/goclient
#                  ./bench/stream/loopback), for a machine without Go
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
rows=${BENCH_ROWS:-200000}
batch=${BENCH_BATCH:-256}
py=${BENCH_PYTHON:-python3}
. "$repo/bench/lib.sh"

"$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else "no CUDA GPU: torch.cuda.is_available() is False")'
bench_init gpu
if [ -n "${BENCH_BIN:-}" ]; then
	cp "$BENCH_BIN/deeplaked" "$BENCH_BIN/goclient" "$BENCH_BIN/loopback" "$work/"
else
	log "building deeplaked and the Go client"
	(cd "$repo" && go build -o "$work/deeplaked" ./cmd/deeplaked && go build -o "$work/goclient" ./bench/stream/goclient &&
		go build -o "$work/loopback" ./bench/stream/loopback)
fi
"$py" -c 'import torch; p = torch.cuda.get_device_properties(0); print(f"{p.name}, {p.total_memory >> 30} GiB; torch {torch.__version__}")' >&2
log "generating $rows rows"
"$py" "$repo/bench/stream/anchors.py" gen "$work" "$rows"
start_deeplaked "$work/deeplaked"
log "loading deeplaked"
"$py" "$repo/bench/stream/anchors.py" load-dl "$dldsn" "$work"

results="$work/results.jsonl"
export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
log "ceilings: host-to-device copies, a registered shared area, the .npy"
"$py" "$repo/bench/stream/gpu.py" ceilings "$work" "$batch" | tee -a "$results"
log "the Python loader into the GPU (${BENCH_ROUNDS:-3} rounds)"
for round in $(seq "${BENCH_ROUNDS:-3}"); do
	for m in "$dlsockdsn|Python loader, SHARED_MEMORY, to cuda, pin_memory|pin|cuda" \
		"$dlsockdsn|Python loader, SHARED_MEMORY, to cuda|nopin|cuda" \
		"$dldsn|Python loader, TCP, to cuda, pin_memory|pin|cuda" \
		"$dlsockdsn|Python loader, SHARED_MEMORY, to cpu|nopin|cpu"; do
		IFS='|' read -r dsn name pin dev <<<"$m"
		"$py" "$repo/bench/stream/gpu.py" loader "$work" "$batch" "$dsn" "$name" "$pin" "$dev" | tee -a "$results"
	done
done
log "the Go client and the loopback TCP ceilings (${BENCH_GO_ROUNDS:-${BENCH_ROUNDS:-3}} rounds)"
dlsockurl="postgres://bench@/bench?host=$work/sock&port=$dlport"
for round in $(seq "${BENCH_GO_ROUNDS:-${BENCH_ROUNDS:-3}}"); do
	"$work/goclient" -dsn "$dldsn" -batch "$batch" | tee -a "$results"
	"$work/goclient" -dsn "$dlsockurl" -batch "$batch" -shm | tee -a "$results"
	"$work/loopback" -bytes $((rows * 12288)) | tee -a "$results"
	"$work/loopback" -distinct -bytes $((rows * 12288)) | tee -a "$results"
	"$work/loopback" -file "$work/images.npy" -bytes $((rows * 12288)) | tee -a "$results"
done

"$py" - "$results" "$rows" "$batch" "$machine" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"\n{sys.argv[2]} rows of uint8[3][64][64] + int label, batches of {sys.argv[3]}; {sys.argv[4]}\n")
print("| reader | GB/s (median) | runs | first batch (median) | verified |")
print("| --- | ---: | --- | ---: | --- |")
by = {}
for r in rows:
    by.setdefault(r["name"], []).append(r)
med = {}
for name, rs in by.items():
    if "gb_per_s" not in rs[0]:
        print(f"| {name} | | | | {rs[0].get('error')} |")
        continue
    g = [r["gb_per_s"] for r in rs]
    med[name] = statistics.median(g)
    first = [r.get("first_batch_ms", r.get("first_bytes_ms", 0)) for r in rs]
    ver = "yes" if all(r.get("verified") for r in rs) else ("no" if any("verified" in r for r in rs) else "")
    print(f"| {name} | {med[name]:.2f} | {' '.join(f'{x:.2f}' for x in g)} | {statistics.median(first):.1f} ms | {ver} |")
def ratio(a, b):
    if a in med and b in med:
        print(f"- {a} / {b}: {med[a] / med[b]:.2f}")
print()
ratio("Python loader, SHARED_MEMORY, to cuda, pin_memory", "host-to-device copy ceiling (one pinned buffer)")
ratio("Python loader, SHARED_MEMORY, to cuda, pin_memory", "local .npy (numpy.load(mmap_mode='r')), pin_memory, to cuda")
ratio("Python loader, SHARED_MEMORY, to cuda, pin_memory", "Python loader, SHARED_MEMORY, to cpu")
ratio("deeplaked, Go client (client/stream)", "loopback TCP ceiling")
ratio("deeplaked, Go client (client/stream)", "loopback TCP ceiling, distinct data")
ratio("deeplaked, Go client (client/stream)", "loopback TCP ceiling, from a file (pread, CRC32C, write)")
PY
