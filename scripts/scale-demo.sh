#!/usr/bin/env bash
# scale-demo.sh runs two deeplaked servers on one S3 bucket, as the
# docker-compose "scale" profile does, without Docker: versitygw on
# 127.0.0.1, server A with --durability bucket, server B attached to A's
# catalog. A table made on A is read on B, rows added on B are read on A.
#
#   ./scripts/scale-demo.sh            # builds ./cmd/deeplaked; needs psql and versitygw
#   KEEP=1 ./scripts/scale-demo.sh     # leave the servers running until Ctrl-C
#
# Environment: PORT_A (5433), PORT_B (5434), S3_PORT (7070), DEEPLAKED_BIN
# (a built binary), DEEPLAKED_VERSITYGW (the versitygw binary; default as
# the S3 tests find it, ./scripts/test.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."

port_a=${PORT_A:-5433} port_b=${PORT_B:-5434} s3_port=${S3_PORT:-7070}
for p in "$port_a" "$port_b" "$s3_port"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		echo "scale-demo: port $p is taken; set PORT_A, PORT_B or S3_PORT" >&2
		exit 1
	fi
done
gw=${DEEPLAKED_VERSITYGW:-$HOME/.cache/deeplaked/bin/versitygw}
[ -x "$gw" ] || gw=$(command -v versitygw) || { echo "scale-demo: no versitygw; run ./scripts/test.sh" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/deeplaked-scale-demo.XXXXXX")
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

bin=${DEEPLAKED_BIN:-}
if [ -z "$bin" ]; then
	echo "building deeplaked"
	go build -o "$work/deeplaked" ./cmd/deeplaked
	bin=$work/deeplaked
fi

wait_port() {
	for _ in $(seq 300); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return
		kill -0 "$2" 2>/dev/null || { echo "scale-demo: $3 exited; its log:" >&2; cat "$work/$3.log" >&2; exit 1; }
		sleep 0.1
	done
	echo "scale-demo: $3 is not listening on $1" >&2
	exit 1
}

export AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo-secret AWS_REGION=us-east-1
mkdir -p "$work/s3"
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
	"$gw" --port "127.0.0.1:$s3_port" --quiet posix "$work/s3" >"$work/s3.log" 2>&1 &
pids+=($!)
wait_port "$s3_port" $! s3

# The same flags as the compose file's services: one bucket and prefix,
# commits acknowledged once their log entry is in the bucket.
common=(--storage s3://deeplake/demo --s3-endpoint "http://127.0.0.1:$s3_port" --durability bucket)
"$bin" "${common[@]}" --listen "127.0.0.1:$port_a" --data-dir "$work/a" 2>"$work/a.log" &
pids+=($!)
wait_port "$port_a" $! a
"$bin" "${common[@]}" --listen "127.0.0.1:$port_b" --data-dir "$work/b" --attach 2>"$work/b.log" &
pids+=($!)
wait_port "$port_b" $! b
echo "versitygw on 127.0.0.1:$s3_port, deeplaked A on $port_a, B on $port_b (attached to A's catalog)"

sql() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U demo -d demo "${@:2}"; }
# until PORT SQL WANT: run SQL on PORT until it prints WANT (the other
# server's commits arrive within --refresh-interval, 1 s by default).
until_shows() {
	local got=""
	for _ in $(seq 50); do
		got=$(sql "$1" -At -c "$2" 2>&1 || true)
		[ "$got" = "$3" ] && { echo "$got"; return; }
		sleep 0.2
	done
	echo "scale-demo: port $1 gave '$got' for '$2', want '$3'" >&2
	exit 1
}

echo "A: CREATE TABLE samples, INSERT 3 rows"
sql "$port_a" -c "CREATE TABLE samples (id int, label text, emb float32[3])" \
	-c "INSERT INTO samples VALUES (1, 'cat', '{1,0,0}'), (2, 'dog', '{0,1,0}'), (3, 'fox', '{0,0,1}')"
echo -n "B: SELECT count(*) FROM samples -> "
until_shows "$port_b" "SELECT count(*) FROM samples" 3
echo "B: INSERT 1 row"
sql "$port_b" -c "INSERT INTO samples VALUES (4, 'owl', '{1,1,1}')"
echo -n "A: SELECT count(*) FROM samples -> "
until_shows "$port_a" "SELECT count(*) FROM samples" 4
sql "$port_a" -c "SELECT * FROM samples ORDER BY id"
echo "ok: both servers serve one catalog from s3://deeplake/demo"

if [ "${KEEP:-}" = 1 ]; then
	echo "psql -h 127.0.0.1 -p $port_a -U demo demo   (or -p $port_b); Ctrl-C stops both"
	wait "${pids[0]}"
fi
