"""psycopg2 (Debian's python3-psycopg2): parameters interpolated on the
client (lists become ARRAY[...] constructors), results in text format,
copy_from / copy_expert, cancel from another thread. See common.py."""

import io
import time

import psycopg2
import psycopg2.errorcodes
import psycopg2.extensions
import psycopg2.extras

from common import (Canceller, COLUMNS, COPY_ROWS, COPY_CSV, COPY_TEXT, ITEMS, SEQ_ROWS, expect, expect_rows, expect_seq,
                    parse_vector_text, run, seq_ddl, seq_rows, table_ddl)

ITEMS_TABLE = "psycopg2_items"
COPY_TABLE = "psycopg2_copy"
SEQ_TABLE = "psycopg2_seq"


def connect():
    conn = psycopg2.connect("")
    conn.autocommit = True
    return conn


def vector_text(v):
    return None if v is None else "[" + ",".join(repr(x) for x in v) + "]"


def as_python(r):
    """A text-format row as the values in common.py: bytea arrives as a
    memoryview, vector as its text, arrays as lists."""
    return (r[0], r[1], r[2], None if r[3] is None else bytes(r[3]), parse_vector_text(r[4]), r[5], r[6])


def step_connect():
    conn = connect()
    try:
        expect("server_version", conn.server_version // 10000, 15)
        cur = conn.cursor()
        cur.execute("SELECT %s + 1", (41,))
        expect("SELECT %s + 1", cur.fetchone(), (42,))
    finally:
        conn.close()


def step_create():
    conn = connect()
    try:
        cur = conn.cursor()
        for table in (ITEMS_TABLE, COPY_TABLE):
            cur.execute(f"DROP TABLE IF EXISTS {table}")
            cur.execute(table_ddl(table))
    finally:
        conn.close()


def step_insert():
    conn = connect()
    try:
        cur = conn.cursor()
        # A list becomes ARRAY[1.5, -2.0, 0.25], a nested one
        # ARRAY[ARRAY[1, 2], ARRAY[3, 255]]; bytes '\x00ff10'::bytea.
        cur.executemany(f"INSERT INTO {ITEMS_TABLE} VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        [(r[0], r[1], r[2], r[3], vector_text(r[4]), r[5], r[6]) for r in ITEMS])
        cur.execute(f"SELECT count(*) FROM {ITEMS_TABLE}")
        expect("count", cur.fetchone(), (2,))
    finally:
        conn.close()


def step_select():
    conn = connect()
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT {', '.join(COLUMNS)} FROM {ITEMS_TABLE} WHERE id <= %(max)s ORDER BY id", {"max": 2})
        expect_rows("SELECT", [as_python(r) for r in cur.fetchall()], ITEMS)
    finally:
        conn.close()


def step_cursor():
    conn = connect()
    try:
        cur = conn.cursor()
        cur.execute(f"DROP TABLE IF EXISTS {SEQ_TABLE}")
        cur.execute(seq_ddl(SEQ_TABLE))
        psycopg2.extras.execute_values(cur, f"INSERT INTO {SEQ_TABLE} VALUES %s", seq_rows(), page_size=500)
        query = f"SELECT n, label FROM {SEQ_TABLE} WHERE n > %s ORDER BY n"
        # A named cursor is DECLARE "c1" CURSOR WITHOUT HOLD FOR ..., then
        # FETCH FORWARD itersize FROM "c1" until a short batch, then CLOSE,
        # in the transaction psycopg2 opens outside autocommit.
        conn.autocommit = False
        with conn.cursor(name="c1") as named:
            named.itersize = 100
            named.execute(query, (0,))
            expect_seq("named cursor, itersize 100", list(named), 1)
        with conn.cursor(name="c2") as named:
            named.execute(query, (200,))
            got = []
            while batch := named.fetchmany(250):
                got += batch
            expect_seq("named cursor, fetchmany(250)", got, 201)
        conn.commit()
        # WITH HOLD: the cursor outlives the transaction that declared it.
        named = conn.cursor(name="c3", withhold=True)
        named.itersize = 100
        named.execute(query, (SEQ_ROWS - 1000,))
        first = named.fetchone()
        conn.commit()
        expect_seq("WITH HOLD cursor across COMMIT", [first] + list(named), SEQ_ROWS - 999)
        named.close()
        conn.commit()
        conn.autocommit = True
        cur.execute("SELECT %s", (5,))
        expect("after the cursors", cur.fetchone(), (5,))
    finally:
        conn.close()


def step_copy_in():
    conn = connect()
    try:
        cur = conn.cursor()
        # copy_from sends COPY ... FROM stdin WITH DELIMITER AS '\t' NULL AS '\N'.
        cur.copy_from(io.StringIO(COPY_TEXT), COPY_TABLE, columns=COLUMNS)
        expect("copy_from rowcount", cur.rowcount, 3)
        csv = '20,"from, csv",2.5,\\x41,"[4,5,6]","{7,8,9}","{{9,8},{7,6}}"\n'
        cur.copy_expert(f"COPY {COPY_TABLE} FROM STDIN WITH (FORMAT csv)", io.StringIO(csv))
        cur.execute(f"SELECT {', '.join(COLUMNS)} FROM {COPY_TABLE} ORDER BY id")
        want = list(COPY_ROWS) + [(20, "from, csv", 2.5, b"A", [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [[9, 8], [7, 6]])]
        expect_rows("rows after COPY FROM", [as_python(r) for r in cur.fetchall()], want)
    finally:
        conn.close()


def step_copy_out():
    conn = connect()
    try:
        cur = conn.cursor()
        out = io.StringIO()
        # What copy_in loaded comes back as it went in.
        cur.copy_expert(f"COPY (SELECT * FROM {COPY_TABLE} WHERE id BETWEEN 10 AND 12 ORDER BY id) TO STDOUT WITH (FORMAT csv)", out)
        expect("COPY TO STDOUT (FORMAT csv)", out.getvalue(), COPY_CSV)
        out = io.StringIO()
        cur.copy_to(out, COPY_TABLE, columns=["id", "pixels"])
        expect("copy_to", sorted(out.getvalue().splitlines()),
               ["10\t{{0,1},{2,3}}", "11\t\\N", "12\t{{255,0},{0,255}}", "20\t{{9,8},{7,6}}"])
    finally:
        conn.close()


def step_catalog():
    conn = connect()
    try:
        cur = conn.cursor()
        cur.execute("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = 'public' AND tablename = %s", (ITEMS_TABLE,))
        expect("pg_tables", cur.fetchall(), [(ITEMS_TABLE,)])
        cur.execute("SELECT attname, atttypid::regtype::text FROM pg_catalog.pg_attribute "
                    "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (ITEMS_TABLE,))
        expect("pg_attribute", cur.fetchall(), [("id", "integer"), ("name", "text"), ("score", "double precision"),
                                                ("payload", "bytea"), ("embedding", "vector"), ("weights", "real[]"),
                                                ("pixels", "smallint[]")])
    finally:
        conn.close()


def step_sqlstate():
    conn = connect()
    try:
        cur = conn.cursor()
        try:
            cur.execute("SELECT * FROM psycopg2_missing")
            raise AssertionError("no error for a missing table")
        except psycopg2.errors.UndefinedTable as e:
            expect("missing table pgcode", e.pgcode, psycopg2.errorcodes.UNDEFINED_TABLE)
        try:
            cur.execute(f"INSERT INTO {ITEMS_TABLE} (id) VALUES (%s), (%s)", (100, 100))
            raise AssertionError("no error for a duplicate key")
        except psycopg2.errors.UniqueViolation as e:
            expect("duplicate key pgcode", e.pgcode, "23505")
        # Outside autocommit psycopg2 opens a transaction block itself.
        conn.autocommit = False
        try:
            cur.execute("SELECT 1 / %s", (0,))
            raise AssertionError("no error for division by zero")
        except psycopg2.errors.DivisionByZero as e:
            expect("division by zero pgcode", e.pgcode, "22012")
        expect("transaction status", conn.info.transaction_status, psycopg2.extensions.TRANSACTION_STATUS_INERROR)
        try:
            cur.execute("SELECT 1")
            raise AssertionError("no error in an aborted transaction")
        except psycopg2.errors.InFailedSqlTransaction as e:
            expect("aborted transaction pgcode", e.pgcode, "25P02")
        conn.rollback()
        cur.execute("SELECT %s", (3,))
        expect("after the errors", cur.fetchone(), (3,))
    finally:
        conn.close()


def step_cancel():
    conn = connect()
    try:
        cur = conn.cursor()
        canceller = Canceller(conn.cancel)
        start = time.monotonic()
        try:
            cur.execute("SELECT pg_sleep(%s)", (30,))
            raise AssertionError("pg_sleep was not canceled")
        except psycopg2.errors.QueryCanceled as e:
            expect("cancel pgcode", e.pgcode, "57014")
        finally:
            canceller.stop()
        if time.monotonic() - start > 10:
            raise AssertionError(f"canceled only after {time.monotonic() - start:.1f}s")
        cur.execute("SELECT %s", (4,))
        expect("after cancel", cur.fetchone(), (4,))
    finally:
        conn.close()


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
