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
. "$repo/bench/lib.sh"
bench_init storage

# 1. Build.
log "building deeplaked and the benchmark"
(cd "$repo" && go build -o "$work/deeplaked" ./cmd/deeplaked && go build -o "$work/storagebench" ./bench/storage)

# 2. A throwaway PostgreSQL 15 cluster and deeplaked.
start_pg
start_deeplaked "$work/deeplaked"

# 3. Ingest and scans over the wire.
"$work/storagebench" -phase wire -rows "$rows" -machine "$machine" \
	-dl "$dldsn" -dl-pid "$dlpid" -dl-data "$work/dl" \
	-pg "$pgdsn" -pg-pid "$pgpid" \
	-out "$work/results.json"

# 4. Stop both, then read deeplaked's data directory with the storage layer.
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
