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
. "$repo/bench/lib.sh"
bench_init protocol

# 1. Build.
log "building deeplaked and the benchmark"
(cd "$repo" && go build -o "$work/deeplaked" ./cmd/deeplaked && go build -o "$work/protocolbench" ./bench/protocol)

# 2. A throwaway PostgreSQL 15 cluster and deeplaked.
start_pg
start_deeplaked "$work/deeplaked"

# 3. The measurements; the report goes to stdout.
"$work/protocolbench" -rows "$rows" -queries "$queries" -machine "$machine" \
	-dl "$dldsn" -pg "$pgdsn"
