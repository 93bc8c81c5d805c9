#!/usr/bin/env bash
# run.sh measures --durability bucket against --durability local on
# versitygw, with PostgreSQL 15 in the same run (see README.md).
#
#   bench/scale/durability/run.sh
#   BENCH_INSERTS=500 BENCH_ROWS=100000 bench/scale/durability/run.sh    # quick run
#   BENCH_S3_LATENCY=20ms bench/scale/durability/run.sh                  # a remote S3's round trip
#   BENCH_PG=0 bench/scale/durability/run.sh -mode contend -servers 1,2,4 # servers on one location
#
# Arguments go to the program after the ones run.sh sets.
#
# Environment:
#   BENCH_INSERTS     autocommit INSERTs per round (default 2000)
#   BENCH_ROWS        rows of each COPY (default 1000000)
#   BENCH_ROUNDS      rounds (default 2)
#   BENCH_S3_LATENCY  delay before each S3 request (default 0)
#   BENCH_PG=0        leave PostgreSQL out
#   BENCH_DIR, BENCH_MACHINE as in bench/lib.sh
set -euo pipefail

repo=$(cd "$(dirname "$0")/../../.." && pwd)
. "$repo/bench/lib.sh"
bench_init durability

log "building deeplaked and the benchmark"
(cd "$repo" && go build -o "$work/deeplaked" ./cmd/deeplaked && go build -o "$work/durability" ./bench/scale/durability)

pgflag=()
if [ "${BENCH_PG:-1}" != 0 ]; then
	start_pg
	pgflag=(-pg "$pgdsn")
fi

"$work/durability" -deeplaked "$work/deeplaked" -dir "$work" -machine "$machine" \
	-inserts "${BENCH_INSERTS:-2000}" -rows "${BENCH_ROWS:-1000000}" -rounds "${BENCH_ROUNDS:-2}" \
	-s3-latency "${BENCH_S3_LATENCY:-0}" "${pgflag[@]}" "$@"
