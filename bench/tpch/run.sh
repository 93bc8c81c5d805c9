#!/usr/bin/env bash
# run.sh runs the TPC-H comparison in one run (see README.md): it
# generates the tables at scale factor SF, loads the same files into
# DuckDB (the npm package @duckdb/node-api), a throwaway PostgreSQL 15
# cluster and deeplaked, runs each of the 22 queries once untimed and then
# 3 times on each, and prints one Markdown table: the medians, the speedup
# against PostgreSQL, deeplaked against DuckDB, the sums and the loads.
#
#   bench/tpch/run.sh                  # SF 1
#   SF=0.1 bench/tpch/run.sh           # quick run
#   bench/tpch/run.sh -sf 10 -timeout 300
#
# Flags (each also an environment variable):
#   -sf N             SF             scale factor (default 1)
#   -timeout SECONDS  BENCH_TIMEOUT  longest a query may run (default 60)
#   -runs N           BENCH_RUNS     timed runs of each query (default 3)
# Environment:
#   BENCH_DIR      where the throwaway directory goes (default $TMPDIR or /tmp)
#   BENCH_OUT      a directory to copy report.md and duckdb.json into
#   BENCH_MACHINE  machine description for the report
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
sf=${SF:-1}
timeout=${BENCH_TIMEOUT:-60}
runs=${BENCH_RUNS:-3}
while [ $# -gt 0 ]; do
	case "$1" in
	-sf) sf=$2; shift 2 ;;
	-timeout) timeout=${2%s}; shift 2 ;;
	-runs) runs=$2; shift 2 ;;
	*) echo "usage: $0 [-sf N] [-timeout SECONDS] [-runs N]" >&2; exit 2 ;;
	esac
done
. "$repo/bench/lib.sh"
bench_init tpch
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)

# 1. Build; DuckDB's package (kept in bench/tpch/duckdb/node_modules); the
# data.
log "building deeplaked, tpchgen and tpchbench"
(cd "$repo" && go build -o "$work/deeplaked" ./cmd/deeplaked &&
	go build -o "$work/tpchgen" ./bench/tpch/cmd/tpchgen &&
	go build -o "$work/tpchbench" ./bench/tpch/cmd/tpchbench)
log "npm ci (@duckdb/node-api)"
(cd "$repo/bench/tpch/duckdb" && npm ci --no-audit --no-fund --loglevel=error >&2)
log "generating scale factor $sf"
"$work/tpchgen" -sf "$sf" -out "$work/data" >&2

# 2. DuckDB, in its own process, before the two servers start.
log "DuckDB: load and the 22 queries"
node "$repo/bench/tpch/duckdb/tpch.mjs" -runs "$runs" -timeout "$timeout" -db "$work/tpch.duckdb" \
	"$work/data" "$repo/bench/tpch/queries" >"$work/duckdb.json"
rm -f "$work/tpch.duckdb" "$work/tpch.duckdb.wal"

# 3. PostgreSQL 15 and deeplaked: the loads, the queries, the table.
start_pg
start_deeplaked "$work/deeplaked"
log "deeplaked and PostgreSQL: loads and the 22 queries"
{
	echo "TPC-H scale factor $sf; deeplaked built at $commit."
	"$work/tpchbench" -dir "$work/data" -deeplaked "$dldsn" -postgres "$pgdsn" -duckdb "$work/duckdb.json" \
		-runs "$runs" -timeout "${timeout}s" -machine "$machine" ||
		{ log "tpchbench failed; deeplaked's log:"; tail -20 "$work/deeplaked.log" >&2; exit 1; }
	echo "Load average (1, 5, 15 min) at the start: $load_start; at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
} | tee "$work/report.md"

if [ -n "${BENCH_OUT:-}" ]; then
	mkdir -p "$BENCH_OUT"
	cp "$work/report.md" "$work/duckdb.json" "$BENCH_OUT/"
	log "results in $BENCH_OUT"
fi
