"""psycopg 3 (Debian's python3-psycopg): server-side parameters over the
extended protocol, results in binary format, COPY in text and binary
format, cancel from another thread. See common.py for the protocol."""

import struct
import time

import psycopg
from psycopg import errors
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types import TypeInfo

from common import (Canceller, COLUMNS, COPY_ROWS, COPY_TEXT, ITEMS, SEQ_ROWS, expect, expect_rows, expect_seq,
                    parse_vector_binary, parse_vector_text, run, seq_ddl, seq_rows, table_ddl)

ITEMS_TABLE = "psycopg3_items"
COPY_TABLE = "psycopg3_copy"
SEQ_TABLE = "psycopg3_seq"


def connect():
    return psycopg.connect("", autocommit=True)


def vector_text(v):
    return None if v is None else "[" + ",".join(repr(x) for x in v) + "]"


def step_connect():
    with connect() as conn:
        expect("server_version", conn.info.parameter_status("server_version")[:2], "15")
        expect("SELECT %s + 1", conn.execute("SELECT %s::int + 1", [41]).fetchone(), (42,))


def step_create():
    with connect() as conn:
        for table in (ITEMS_TABLE, COPY_TABLE):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(table_ddl(table))


def step_insert():
    with connect() as conn:
        cur = conn.cursor()
        # executemany sends the rows in one pipeline (Bind/Execute per row,
        # one Sync); vectors go as their text, which the server parses.
        cur.executemany(f"INSERT INTO {ITEMS_TABLE} VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        [(r[0], r[1], r[2], r[3], vector_text(r[4]), r[5], r[6]) for r in ITEMS])
        expect("count", conn.execute(f"SELECT count(*) FROM {ITEMS_TABLE}").fetchone(), (2,))


def select_binary(conn, table, where, params):
    """Reads a table in binary format; returns rows as Python values."""
    cur = conn.cursor(binary=True)
    cur.execute(f"SELECT {', '.join(COLUMNS)} FROM {table} {where} ORDER BY id", params)
    formats = [cur.pgresult.fformat(i) for i in range(cur.pgresult.nfields)]
    expect("result formats", formats, [1] * len(COLUMNS))
    rows = []
    for r in cur.fetchall():
        # psycopg has no loader for vector, so it hands over the bytes.
        if r[4] is not None and not isinstance(r[4], (bytes, bytearray, memoryview)):
            raise AssertionError(f"binary vector came as {type(r[4]).__name__}: {r[4]!r}")
        rows.append((r[0], r[1], r[2], None if r[3] is None else bytes(r[3]), parse_vector_binary(r[4]), r[5], r[6]))
    return rows


def step_select():
    with connect() as conn:
        expect_rows("binary SELECT", select_binary(conn, ITEMS_TABLE, "WHERE id <= %s", [2]), ITEMS)
        # And in text format, the default.
        rows = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM {ITEMS_TABLE} WHERE name = %s", [ITEMS[0][1]]).fetchall()
        r = rows[0]
        expect_rows("text SELECT", [(r[0], r[1], r[2], bytes(r[3]), parse_vector_text(r[4]), r[5], r[6])], ITEMS[:1])


def step_cursor():
    with connect() as conn:
        conn.execute(f"DROP TABLE IF EXISTS {SEQ_TABLE}")
        conn.execute(seq_ddl(SEQ_TABLE))
        conn.cursor().executemany(f"INSERT INTO {SEQ_TABLE} VALUES (%s, %s)", seq_rows())
        query = f"SELECT n, label FROM {SEQ_TABLE} WHERE n > %s ORDER BY n"
        # A server-side cursor: DECLARE "c" CURSOR FOR ... with the
        # parameter bound over the extended protocol, Describe of the portal
        # "c", then FETCH FORWARD itersize FROM "c" until a short batch.
        with conn.transaction():
            with conn.cursor(name="c") as cur:
                cur.itersize = 100
                cur.execute(query, [0])
                expect_seq("server-side cursor, itersize 100", list(cur), 1)
            # In binary: the FETCHes ask for binary results.
            with conn.cursor(name="c_binary", binary=True) as cur:
                cur.execute(query, [200])
                got = []
                while batch := cur.fetchmany(300):
                    got += batch
                expect_seq("binary server-side cursor, fetchmany(300)", got, 201)
        # WITH HOLD works outside a transaction block.
        with conn.cursor(name="c_hold", withhold=True) as cur:
            cur.itersize = 100
            cur.execute(query, [SEQ_ROWS - 1000])
            expect_seq("WITH HOLD cursor", list(cur), SEQ_ROWS - 999)
        # stream() reads the rows one by one as they arrive.
        with conn.cursor() as cur:
            expect_seq("stream", list(cur.stream(query, [0])), 1)
        expect("after the cursors", conn.execute("SELECT %s::int", [5]).fetchone(), (5,))


def vector_dumper(oid):
    class VectorBinaryDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj):
            return struct.pack(f">hh{len(obj)}f", len(obj), 0, *obj)

    VectorBinaryDumper.oid = oid
    return VectorBinaryDumper


class Vector(list):
    """A list sent as pgvector's binary form."""


def step_copy_in():
    with connect() as conn:
        cur = conn.cursor()
        # Text format: psycopg formats each row.
        with cur.copy(f"COPY {COPY_TABLE} ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for r in COPY_ROWS:
                copy.write_row((r[0], r[1], r[2], r[3], vector_text(r[4]), r[5], r[6]))
        # Binary format, the vector with a dumper for the column's type.
        cur.execute(f"SELECT embedding FROM {COPY_TABLE} WHERE false")
        vector_oid = cur.description[0].type_code
        cur.adapters.register_dumper(Vector, vector_dumper(vector_oid))
        with cur.copy(f"COPY {COPY_TABLE} ({', '.join(COLUMNS)}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "text", "float8", "bytea", vector_oid, "float4[]", "int2[]"])
            for r in COPY_ROWS:
                copy.write_row((r[0] + 10, r[1], r[2], r[3], None if r[4] is None else Vector(r[4]), r[5], r[6]))
        got = select_binary(conn, COPY_TABLE, "WHERE id >= %s", [0])
        want = list(COPY_ROWS) + [(r[0] + 10,) + tuple(r[1:]) for r in COPY_ROWS]
        expect_rows("rows after COPY FROM", got, want)


def step_copy_out():
    with connect() as conn:
        cur = conn.cursor()
        # What copy_in loaded comes back as it went in.
        with cur.copy(f"COPY (SELECT * FROM {COPY_TABLE} WHERE id BETWEEN 10 AND 12 ORDER BY id) TO STDOUT") as copy:
            data = b"".join(bytes(chunk) for chunk in copy)
        expect("COPY TO STDOUT", data.decode(), COPY_TEXT)
        with cur.copy(f"COPY (SELECT id, weights, pixels FROM {COPY_TABLE} WHERE id BETWEEN 10 AND 12 ORDER BY id) "
                      "TO STDOUT (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "float4[]", "int2[]"])
            rows = list(copy.rows())
        expect_rows("COPY TO STDOUT (FORMAT BINARY)", rows, [(r[0], r[5], r[6]) for r in COPY_ROWS])


def step_catalog():
    with connect() as conn:
        tables = conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND table_name = %s",
                              ["public", ITEMS_TABLE]).fetchall()
        expect("information_schema.tables", tables, [(ITEMS_TABLE,)])
        cols = conn.execute("SELECT column_name, udt_name FROM information_schema.columns WHERE table_name = %s "
                            "ORDER BY ordinal_position", [ITEMS_TABLE]).fetchall()
        expect("information_schema.columns", cols, [("id", "int4"), ("name", "text"), ("score", "float8"), ("payload", "bytea"),
                                                    ("embedding", "vector"), ("weights", "_float4"), ("pixels", "_int2")])
        # Types by name, as pgvector's register_vector finds the vector type.
        info = TypeInfo.fetch(conn, "vector")
        if info is None:
            raise AssertionError("TypeInfo.fetch(conn, 'vector') found nothing")
        cur = conn.execute(f"SELECT embedding FROM {ITEMS_TABLE} WHERE false")
        expect("vector OID", info.oid, cur.description[0].type_code)
        expect("real[] by name", TypeInfo.fetch(conn, "_float4").oid, 1021)


def step_sqlstate():
    with connect() as conn:
        try:
            conn.execute("SELECT * FROM psycopg3_missing WHERE id = %s", [1])
            raise AssertionError("no error for a missing table")
        except errors.UndefinedTable as e:
            expect("missing table sqlstate", e.sqlstate, "42P01")
        try:
            conn.execute(f"INSERT INTO {ITEMS_TABLE} (id) VALUES (%s), (%s)", [100, 100])
            raise AssertionError("no error for a duplicate key")
        except errors.UniqueViolation as e:
            expect("duplicate key sqlstate", e.sqlstate, "23505")
        # In a transaction block the error aborts it until ROLLBACK.
        conn.autocommit = False
        try:
            conn.execute("SELECT 1 / %s", [0])
            raise AssertionError("no error for division by zero")
        except errors.DivisionByZero as e:
            expect("division by zero sqlstate", e.sqlstate, "22012")
        try:
            conn.execute("SELECT 1")
            raise AssertionError("no error in an aborted transaction")
        except errors.InFailedSqlTransaction as e:
            expect("aborted transaction sqlstate", e.sqlstate, "25P02")
        conn.rollback()
        expect("after the errors", conn.execute("SELECT %s::int", [3]).fetchone(), (3,))


def step_cancel():
    with connect() as conn:
        for query, params in (("SELECT pg_sleep(30)", None), ("SELECT pg_sleep(%s)", [30])):
            canceller = Canceller(conn.cancel)
            start = time.monotonic()
            try:
                conn.execute(query, params)
                raise AssertionError(f"{query} was not canceled")
            except errors.QueryCanceled as e:
                expect("cancel sqlstate", e.sqlstate, "57014")
            finally:
                canceller.stop()
            if time.monotonic() - start > 10:
                raise AssertionError(f"{query}: canceled only after {time.monotonic() - start:.1f}s")
            expect("after cancel", conn.execute("SELECT %s::int", [4]).fetchone(), (4,))


run([
    ("connect", step_connect),
    ("create", step_create),
    ("insert", step_insert),
    ("select", step_select),
    ("cursor", step_cursor),
    ("copy_in", step_copy_in),
    ("copy_out", step_copy_out),
    ("catalog", step_catalog),
    ("sqlstate", step_sqlstate),
    ("cancel", step_cancel),
])
