"""Shared pieces of the Python client tests: the target, the tables, the
data every client writes and expects back, and the step runner.

Each script runs the steps in order and prints "ok <step>" or
"FAIL <step>: <why>" for each; it exits 1 when a step failed. Connection
settings come from the libpq environment (PGHOST, PGPORT, PGUSER,
PGDATABASE); CLIENT_TARGET=postgres declares tensors as PostgreSQL arrays.
"""

import os
import struct
import sys
import threading
import traceback

TARGET = os.environ.get("CLIENT_TARGET", "deeplaked")

STEPS = ["connect", "create", "insert", "select", "cursor", "copy_in", "copy_out", "catalog", "sqlstate", "cancel"]


def table_ddl(name):
    if TARGET == "postgres":
        weights, pixels = "real[]", "smallint[]"
    else:
        weights, pixels = "float32[3]", "uint8[2][2]"
    return (f"CREATE TABLE {name} (id int PRIMARY KEY, name text, score float8, payload bytea, "
            f"embedding vector(3), weights {weights}, pixels {pixels})")


# The cursor step's table: SEQ_ROWS rows (n, 'row n'), read in pieces.
SEQ_ROWS = 1200


def seq_ddl(name):
    return f"CREATE TABLE {name} (n int PRIMARY KEY, label text)"


def seq_rows(first=1, last=SEQ_ROWS):
    return [(n, f"row {n}") for n in range(first, last + 1)]


def expect_seq(what, got, first, last=SEQ_ROWS):
    """Checks that got is the rows first..last of the cursor step's
    table, each once and in order."""
    got = [tuple(r) for r in got]
    want = seq_rows(first, last)
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            raise AssertionError(f"{what}: row {i} is {g!r}, want {w!r}")
    if len(got) != len(want):
        raise AssertionError(f"{what}: {len(got)} rows, want {len(want)} ({first}..{last})")


COLUMNS = ["id", "name", "score", "payload", "embedding", "weights", "pixels"]

# Rows as Python values: vector and tensors as lists of floats / ints.
ITEMS = [
    (1, "alpha 'quoted' é", 1.5, b"\x00\xff\x10", [0.5, 1.0, 2.0], [1.5, -2.0, 0.25], [[1, 2], [3, 255]]),
    (2, None, None, None, None, None, None),
]

COPY_ROWS = [
    (10, "beta", -0.5, b"\x01\x02", [1.0, 2.0, 3.0], [0.0, 0.5, 1.0], [[0, 1], [2, 3]]),
    (11, None, None, None, None, None, None),
    (12, "gamma\tdelta", 1e20, b"", [-1.0, 0.0, 1.0], [3.0, 2.0, 1.0], [[255, 0], [0, 255]]),
]

# COPY_ROWS in COPY's text format.
COPY_TEXT = (
    "10\tbeta\t-0.5\t\\\\x0102\t[1,2,3]\t{0,0.5,1}\t{{0,1},{2,3}}\n"
    "11\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n"
    "12\tgamma\\tdelta\t1e+20\t\\\\x\t[-1,0,1]\t{3,2,1}\t{{255,0},{0,255}}\n"
)

# COPY_ROWS as COPY (SELECT * ... ORDER BY id) TO STDOUT (FORMAT csv)
# writes them; in text format they come back as COPY_TEXT.
COPY_CSV = (
    "10,beta,-0.5,\\x0102,\"[1,2,3]\",\"{0,0.5,1}\",\"{{0,1},{2,3}}\"\n"
    "11,,,,,,\n"
    "12,gamma\tdelta,1e+20,\\x,\"[-1,0,1]\",\"{3,2,1}\",\"{{255,0},{0,255}}\"\n"
)


def parse_vector_text(s):
    """pgvector's text form, '[1,2,3]'."""
    if s is None:
        return None
    if not (s.startswith("[") and s.endswith("]")):
        raise AssertionError(f"not a vector: {s!r}")
    return [float(x) for x in s[1:-1].split(",")]


def parse_vector_binary(b):
    """pgvector's binary form: int16 dimensions, int16 0, float4 each."""
    if b is None:
        return None
    b = bytes(b)
    dim, unused = struct.unpack(">hh", b[:4])
    if unused != 0 or len(b) != 4 + 4 * dim:
        raise AssertionError(f"bad binary vector: {b.hex()}")
    return list(struct.unpack(f">{dim}f", b[4:]))


class Canceller:
    """Calls cancel 0.5 s from now and every second after until stopped:
    a cancel request that reaches the server before the query does is
    lost, as in PostgreSQL, so one alone could leave the test waiting."""

    def __init__(self, cancel):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(cancel,), daemon=True)
        self._thread.start()

    def _run(self, cancel):
        wait = 0.5
        while not self._stop.wait(wait):
            cancel()
            wait = 1.0

    def stop(self):
        self._stop.set()
        self._thread.join()


def expect(what, got, want):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def expect_rows(what, got, want):
    got = [tuple(r) for r in got]
    want = [tuple(r) for r in want]
    if len(got) != len(want):
        raise AssertionError(f"{what}: {len(got)} rows, want {len(want)}: {got!r}")
    for g, w in zip(got, want):
        if g != w:
            raise AssertionError(f"{what}: got row {g!r}, want {w!r}")


def run(steps):
    """Runs each (name, function) in order; a step fails by raising."""
    names = [name for name, _ in steps]
    if names != STEPS:
        raise SystemExit(f"steps {names} differ from {STEPS}")
    failed = False
    for name, fn in steps:
        try:
            fn()
            print(f"ok {name}", flush=True)
        except Exception as e:  # noqa: BLE001: every failure is reported
            failed = True
            msg = " | ".join(f"{type(e).__name__}: {e}".strip().splitlines())
            print(f"FAIL {name}: {msg}", flush=True)
            if os.environ.get("CLIENT_TRACEBACK"):
                traceback.print_exc(file=sys.stdout)
    sys.exit(1 if failed else 0)
