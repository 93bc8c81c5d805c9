#!/usr/bin/env bash
# run.sh runs the vector-search benchmark in one run (see README.md):
# clustered 128-d vectors and queries near them generated with a fixed
# seed, their exact top-10 by brute force, then deeplaked (exact search and
# pgvector's HNSW index: build time, size, recall@10 and queries/s at
# several hnsw.ef_search, one client and 8, with and without a 1% filter)
# and the anchors given the same vectors and parameters: hnswlib-node and
# LanceDB from npm. Each result is one JSON line; Markdown tables follow.
#
#   bench/ann/run.sh                                  # 1,000,000 rows, 1,000 queries
#   BENCH_ROWS=100000 bench/ann/run.sh                # quick run
#
# Environment:
#   BENCH_ROWS           rows (default 1000000)
#   BENCH_QUERIES        queries (default 1000)
#   BENCH_EXACT_QUERIES  queries of the exact (full scan) passes (default 100)
#   BENCH_CLIENTS        clients of the concurrent passes (default 8)
#   BENCH_EF             hnsw.ef_search values (default 40,100,200,400,800)
#   BENCH_ANCHORS        0 to skip the Node anchors
#   BENCH_DIR            where the throwaway directory goes (default $TMPDIR or /tmp)
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
rows=${BENCH_ROWS:-1000000}
queries=${BENCH_QUERIES:-1000}
exact=${BENCH_EXACT_QUERIES:-100}
clients=${BENCH_CLIENTS:-8}
export BENCH_EF=${BENCH_EF:-40,100,200,400,800} BENCH_CLIENTS=$clients BENCH_EXACT_QUERIES=$exact
. "$repo/bench/lib.sh"
bench_init ann
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)

# 1. Build; the anchors' packages (kept in bench/ann/anchors/node_modules);
# the data and its exact top-10.
log "building deeplaked and the benchmark"
(cd "$repo" && go build -o "$work/deeplaked" ./cmd/deeplaked && go build -o "$work/ann" ./bench/ann)
if [ "${BENCH_ANCHORS:-1}" != 0 ]; then
	log "npm install (hnswlib-node, @lancedb/lancedb)"
	(cd "$repo/bench/ann/anchors" && npm install --no-audit --no-fund --loglevel=error >&2)
fi
mkdir -p "$work/data"
log "generating $rows vectors, $queries queries and their exact top-10"
results="$work/results.jsonl"
"$work/ann" gen -dir "$work/data" -rows "$rows" -queries "$queries" | tee -a "$results"

# 2. deeplaked: load, exact search, the HNSW index. The server is stopped
# afterwards so that it holds no memory while the anchors run.
start_deeplaked "$work/deeplaked"
"$work/ann" server -dir "$work/data" -dsn "$dldsn" -data-dir "$work/dl" -server-pid "$dlpid" \
	-clients "$clients" -ef "$BENCH_EF" -exact-queries "$exact" | tee -a "$results"
kill -TERM "$dlpid"
wait "$dlpid" || true
dlpid=""

# 3. The anchors, one process each, on the same files.
if [ "${BENCH_ANCHORS:-1}" != 0 ]; then
	log "hnswlib-node"
	node "$repo/bench/ann/anchors/hnswlib.mjs" "$work/data" "$work" | tee -a "$results"
	log "LanceDB"
	RUST_LOG=error node "$repo/bench/ann/anchors/lancedb.mjs" "$work/data" "$work" | tee -a "$results"
fi

# 4. The tables.
echo
echo "$rows × 128-d clustered vectors, $queries queries (exact passes: $exact), k=10; deeplaked built at $commit; $machine"
echo "load average (1, 5, 15 min) at the start: $load_start; at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/ann" table "$results"
