"""SQLAlchemy 1.4 with psycopg2 and pandas (Debian's python3-sqlalchemy,
python3-pandas): a Table with custom vector and tensor types, Core inserts
with bound parameters, pandas.read_sql, COPY from and to DataFrames
through CSV, the inspector for the catalog. See common.py."""

import io
import math
import time
import warnings

import pandas as pd
import psycopg2.errors
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.compiler import compiles

from common import (Canceller, COLUMNS, COPY_CSV, COPY_ROWS, ITEMS, SEQ_ROWS, TARGET, expect, expect_rows, expect_seq,
                    parse_vector_text, run, seq_rows)

ITEMS_TABLE = "sqlalchemy_items"
COPY_TABLE = "sqlalchemy_copy"
SEQ_TABLE = "sqlalchemy_seq"


class Vector(sa.types.UserDefinedType):
    """pgvector's vector(n), sent and read as its text form."""

    cache_ok = True

    def __init__(self, dim):
        self.dim = dim

    def get_col_spec(self, **kw):
        return f"vector({self.dim})"

    def bind_processor(self, dialect):
        return lambda v: None if v is None else "[" + ",".join(repr(float(x)) for x in v) + "]"

    def result_processor(self, dialect, coltype):
        return parse_vector_text


class Tensor(postgresql.ARRAY):
    """A deeplaked tensor column: a PostgreSQL array to clients, declared
    with its tensor type."""

    def __init__(self, item_type, ddl, dimensions):
        super().__init__(item_type, dimensions=dimensions)
        self.ddl = ddl


@compiles(Tensor, "postgresql")
def compile_tensor(element, compiler, **kw):
    return element.ddl


def table(metadata, name):
    pg = TARGET == "postgres"
    return sa.Table(
        name, metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("name", sa.Text),
        sa.Column("score", postgresql.DOUBLE_PRECISION),
        sa.Column("payload", sa.LargeBinary),
        sa.Column("embedding", Vector(3)),
        sa.Column("weights", Tensor(postgresql.REAL, "real[]" if pg else "float32[3]", 1)),
        sa.Column("pixels", Tensor(sa.SmallInteger, "smallint[]" if pg else "uint8[2][2]", 2)),
    )


metadata = sa.MetaData()
items = table(metadata, ITEMS_TABLE)
copy_table = table(metadata, COPY_TABLE)
seq = sa.Table(SEQ_TABLE, sa.MetaData(),
               sa.Column("n", sa.Integer, primary_key=True, autoincrement=False),
               sa.Column("label", sa.Text))

# The libpq environment (PGHOST...) names the server.
engine = sa.create_engine("postgresql+psycopg2://", future=True)


def frame_rows(df):
    """A DataFrame's rows as the tuples in common.py (NaN back to None)."""
    rows = []
    for rec in df.itertuples(index=False):
        row = []
        for v in rec:
            if isinstance(v, float) and math.isnan(v):
                v = None
            elif isinstance(v, memoryview):
                v = bytes(v)
            row.append(v)
        row[0] = int(row[0])
        rows.append(tuple(row))
    return rows


def step_connect():
    with engine.connect() as conn:
        expect("server_version_info", engine.dialect.server_version_info[0], 15)
        expect("SELECT :x + 1", conn.execute(sa.text("SELECT :x + 1"), {"x": 41}).scalar(), 42)


def step_create():
    with engine.begin() as conn:
        for name in (ITEMS_TABLE, COPY_TABLE):
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {name}"))
        metadata.create_all(conn, checkfirst=False)


def step_insert():
    with engine.begin() as conn:
        result = conn.execute(items.insert(), [dict(zip(COLUMNS, r)) for r in ITEMS])
        expect("rowcount", result.rowcount, 2)


def step_select():
    with engine.connect() as conn:
        df = pd.read_sql(sa.select(items).where(items.c.id <= 2).order_by(items.c.id), conn)
        expect("columns", list(df.columns), COLUMNS)
        expect("score dtype", str(df["score"].dtype), "float64")
        expect_rows("read_sql", frame_rows(df), ITEMS)


def step_cursor():
    with engine.begin() as conn:
        seq.drop(conn, checkfirst=True)
        seq.create(conn)
        conn.execute(seq.insert(), [{"n": n, "label": label} for n, label in seq_rows()])
    query = sa.select(seq.c.n, seq.c.label).where(seq.c.n > sa.bindparam("after")).order_by(seq.c.n)
    with engine.connect() as conn:
        # stream_results makes the psycopg2 dialect use a named cursor
        # (DECLARE, FETCH FORWARD); yield_per(100) fetches 100 rows at a time.
        streaming = conn.execution_options(stream_results=True)
        result = streaming.execute(query, {"after": 0})
        if result.cursor.name is None:
            raise AssertionError("stream_results did not give a named cursor")
        result = result.yield_per(100)
        got = []
        for partition in result.partitions():
            if len(partition) > 100:
                raise AssertionError(f"yield_per(100) gave a partition of {len(partition)} rows")
            got += partition
        expect_seq("stream_results, yield_per(100)", got, 1)
        # pandas reads the streamed result 100 rows per DataFrame.
        frames = list(pd.read_sql(query, streaming, params={"after": SEQ_ROWS - 1000}, chunksize=100))
        expect("read_sql chunks", [len(df) for df in frames], [100] * 10)
        expect_seq("read_sql, chunksize 100", [(int(n), label) for df in frames for n, label in df.itertuples(index=False)],
                   SEQ_ROWS - 999)
        conn.rollback()
        expect("after the cursors", conn.execute(sa.text("SELECT 5")).scalar(), 5)


def tensor_text(v):
    if v is None:
        return None
    if isinstance(v, list):
        return "{" + ",".join(tensor_text(x) for x in v) + "}"
    return repr(v)


def step_copy_in():
    # A DataFrame written as CSV into COPY, the way pandas' to_sql docs
    # suggest for PostgreSQL.
    df = pd.DataFrame(
        [(r[0], r[1], r[2], None if r[3] is None else "\\x" + r[3].hex(),
          None if r[4] is None else "[" + ",".join(repr(x) for x in r[4]) + "]", tensor_text(r[5]), tensor_text(r[6]))
         for r in COPY_ROWS], columns=COLUMNS)
    buf = io.StringIO()
    df.to_csv(buf, index=False, header=False)
    buf.seek(0)
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.copy_expert(f"COPY {COPY_TABLE} ({', '.join(COLUMNS)}) FROM STDIN WITH (FORMAT csv)", buf)
        raw.commit()
    finally:
        raw.close()
    with engine.connect() as conn:
        got = pd.read_sql(sa.select(copy_table).order_by(copy_table.c.id), conn)
    expect_rows("rows after COPY FROM", frame_rows(got), COPY_ROWS)


def step_copy_out():
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        buf = io.StringIO()
        cur.copy_expert(f"COPY (SELECT * FROM {COPY_TABLE} ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)", buf)
        raw.commit()
    finally:
        raw.close()
    # What copy_in loaded comes back as it went in.
    expect("COPY TO STDOUT (FORMAT csv, HEADER)", buf.getvalue(), ",".join(COLUMNS) + "\n" + COPY_CSV)
    buf.seek(0)
    df = pd.read_csv(buf)
    expect("read_csv columns", list(df.columns), COLUMNS)
    expect("read_csv embedding", list(df["embedding"].fillna("")), ["[1,2,3]", "", "[-1,0,1]"])
    expect("read_csv score", list(df["score"].fillna(-1)), [-0.5, -1, 1e20])


def step_catalog():
    insp = sa.inspect(engine)
    names = insp.get_table_names()
    if ITEMS_TABLE not in names:
        raise AssertionError(f"get_table_names() lacks {ITEMS_TABLE}: {names}")
    with warnings.catch_warnings():
        # SQLAlchemy has no type for vector and says so.
        warnings.filterwarnings("ignore", "Did not recognize type 'vector'")
        cols = insp.get_columns(ITEMS_TABLE)
    expect("column names", [c["name"] for c in cols], COLUMNS)
    types = [type(c["type"]) for c in cols]
    expect("column types", types[:4], [sa.INTEGER, sa.TEXT, postgresql.DOUBLE_PRECISION, postgresql.BYTEA])
    expect("array columns", [type(c["type"]).__name__ for c in cols[5:]], ["ARRAY", "ARRAY"])
    expect("primary key", insp.get_pk_constraint(ITEMS_TABLE)["constrained_columns"], ["id"])


def step_sqlstate():
    with engine.connect() as conn:
        try:
            pd.read_sql(sa.text("SELECT * FROM sqlalchemy_missing"), conn)
            raise AssertionError("no error for a missing table")
        except sa.exc.ProgrammingError as e:
            expect("missing table pgcode", e.orig.pgcode, "42P01")
        conn.rollback()
        try:
            conn.execute(items.insert(), [{"id": 100}, {"id": 100}])
            raise AssertionError("no error for a duplicate key")
        except sa.exc.IntegrityError as e:
            expect("duplicate key pgcode", e.orig.pgcode, "23505")
            if not isinstance(e.orig, psycopg2.errors.UniqueViolation):
                raise AssertionError(f"duplicate key raised {type(e.orig).__name__}")
        conn.rollback()
        expect("after the errors", conn.execute(sa.text("SELECT :x"), {"x": 3}).scalar(), 3)


def step_cancel():
    with engine.connect() as conn:
        dbapi_conn = conn.connection.dbapi_connection
        canceller = Canceller(dbapi_conn.cancel)
        start = time.monotonic()
        try:
            pd.read_sql(sa.text("SELECT pg_sleep(30)"), conn)
            raise AssertionError("pg_sleep was not canceled")
        except sa.exc.OperationalError as e:
            expect("cancel pgcode", e.orig.pgcode, "57014")
        finally:
            canceller.stop()
        if time.monotonic() - start > 10:
            raise AssertionError(f"canceled only after {time.monotonic() - start:.1f}s")
        conn.rollback()
        expect("after cancel", conn.execute(sa.text("SELECT 4")).scalar(), 4)


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
