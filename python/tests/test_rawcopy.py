"""The COPY read off the socket (deeplaked.rawcopy): against a scripted
server on a socket pair, then against a running server (DEEPLAKED_DSN),
frame for frame against psycopg's copy."""

import os
import struct
import threading
import time

import numpy as np
import pytest

import deeplaked
from deeplaked import rawcopy
from deeplaked.frame import ALIGN
from deeplaked.loader import copy_sql, stream_frames
from fakeserver import interrupt_after, Script, error_fields, msg
from framebuild import build_frame, column

psycopg = pytest.importorskip("psycopg")

DSN = os.environ.get("DEEPLAKED_DSN")
needs_server = pytest.mark.skipif(not DSN, reason="DEEPLAKED_DSN not set")


def payloads(frames):
    return [build_frame(i, 1, [column("x", 0, 5, values=struct.pack("<i", i))]) for i in range(frames)]


def test_scripted_stream_partial_reads():
    frames = payloads(3)
    out = (msg(b"S", b"client_encoding\0UTF8\0") + msg(b"H", b"\1\0\1\0\1")
           + msg(b"d", frames[0]) + msg(b"N", b"SNOTICE\0Mhello\0\0") + msg(b"d", frames[1])
           + msg(b"A", struct.pack("!i", 1) + b"ch\0\0") + msg(b"d", frames[2])
           + msg(b"c") + msg(b"C", b"COPY 3\0") + msg(b"Z", b"I"))
    s = Script(out)
    try:
        assert not s.client.getblocking()
        got = list(rawcopy.stream_copy(s.conn, "COPY t TO STDOUT WITH (FORMAT tensor)"))
        assert s.query == (b"Q", "COPY t TO STDOUT WITH (FORMAT tensor)".encode() + b"\0")
        assert [g.tobytes() for g in got] == frames
        assert all(g.ctypes.data % ALIGN == 0 and g.dtype == np.uint8 for g in got)
        assert not s.client.getblocking(), "the socket's blocking mode is restored"
        assert not s.conn.lock.locked() and s.conn.cancels == 0
    finally:
        s.close()


def test_scripted_error_after_frames():
    frames = payloads(2)
    out = (msg(b"H", b"\1\0\0") + msg(b"d", frames[0]) + msg(b"d", frames[1])
           + msg(b"E", error_fields("22012", "division by zero", detail="row 3", hint="check it"))
           + msg(b"Z", b"I"))
    s = Script(out, chunk=3)
    try:
        got = []
        with pytest.raises(psycopg.errors.DivisionByZero) as e:
            for f in stream_frames(s.conn, "COPY x TO STDOUT WITH (FORMAT tensor)", raw=True):
                got.append(f.columns["x"].to_numpy().tolist())
        assert got == [[0], [1]]
        assert e.value.sqlstate == "22012"
        assert str(e.value) == "division by zero\nDETAIL:  row 3\nHINT:  check it"
        assert e.value.diag.message_detail == "row 3" and e.value.diag.severity == "ERROR"
        assert not s.conn.lock.locked() and s.conn.cancels == 0
    finally:
        s.close()


def test_scripted_unknown_sqlstate():
    s = Script(msg(b"E", error_fields("22Z99", "odd")) + msg(b"Z", b"I"))
    try:
        with pytest.raises(psycopg.DataError) as e:
            list(rawcopy.stream_copy(s.conn, "COPY x TO STDOUT"))
        assert e.value.sqlstate == "22Z99" and str(e.value) == "odd"
    finally:
        s.close()


def test_scripted_not_a_copy():
    s = Script(msg(b"T", b"\0\0") + msg(b"C", b"SELECT 0\0") + msg(b"Z", b"I"))
    try:
        with pytest.raises(psycopg.ProgrammingError):
            list(rawcopy.stream_copy(s.conn, "SELECT 1"))
        assert not s.conn.lock.locked()
    finally:
        s.close()


def test_scripted_copy_in_is_refused():
    err = msg(b"E", error_fields("57014", "COPY from stdin failed")) + msg(b"Z", b"I")
    s = Script(msg(b"G", b"\0\0\0") + err)
    try:
        with pytest.raises(psycopg.ProgrammingError):
            list(rawcopy.stream_copy(s.conn, "COPY x FROM STDIN"))
        s.thread.join(2)
        assert s.got.startswith(b"f"), "a CopyFail answers CopyInResponse"
    finally:
        s.close()


def test_scripted_early_close_cancels_and_drains():
    frames = payloads(4)
    out = (msg(b"H", b"\1\0\0") + b"".join(msg(b"d", f) for f in frames)
           + msg(b"E", error_fields("57014", "canceling statement due to user request")) + msg(b"Z", b"I"))
    s = Script(out)
    try:
        g = stream_frames(s.conn, "COPY x TO STDOUT", raw=True)
        assert next(g).batch_index == 0
        g.close()
        assert s.conn.cancels == 1 and not s.conn.lock.locked()
        # Drained to ReadyForQuery: nothing of the stream is left unread.
        s.client.setblocking(False)
        with pytest.raises(BlockingIOError):
            s.client.recv(1)
    finally:
        s.close()


@pytest.mark.parametrize("where", [3, 20])  # in a header, in a body
def test_scripted_interrupt_mid_message(where):
    frames = payloads(3)
    head = msg(b"H", b"\1\0\0") + msg(b"d", frames[0])
    out = (head + msg(b"d", frames[1]) + msg(b"d", frames[2])
           + msg(b"E", error_fields("57014", "canceling statement due to user request")) + msg(b"Z", b"I"))
    s = Script(out, chunk=1, pause_at=len(head) + where)

    try:
        g = stream_frames(s.conn, "COPY x TO STDOUT", raw=True)
        assert next(g).batch_index == 0
        with pytest.raises(KeyboardInterrupt), interrupt_after(0.3):
            next(g)
        assert s.conn.cancels == 1 and not s.conn.lock.locked()
        s.thread.join(5)
        s.client.setblocking(False)
        with pytest.raises(BlockingIOError):
            s.client.recv(1)  # read to ReadyForQuery, and not a byte further
    finally:
        s.close()


def test_scripted_interrupt_in_ready_for_query():
    # Interrupted inside ReadyForQuery's body: the stream is not over until
    # its last byte is read, so the drain reads it, and none is left for
    # libpq.
    frames = payloads(2)
    out = (msg(b"H", b"\1\0\0") + msg(b"d", frames[0]) + msg(b"d", frames[1])
           + msg(b"c") + msg(b"C", b"COPY 2\0") + msg(b"Z", b"I"))
    s = Script(out, chunk=1, pause_at=len(out) - 1)

    try:
        g = stream_frames(s.conn, "COPY x TO STDOUT", raw=True)
        assert [next(g).batch_index for _ in range(2)] == [0, 1]
        with pytest.raises(KeyboardInterrupt), interrupt_after(0.3):
            next(g)
        assert not s.conn.lock.locked()
        s.thread.join(5)
        s.client.setblocking(False)
        with pytest.raises(BlockingIOError):
            s.client.recv(1)
    finally:
        s.close()


def test_scripted_early_close_without_an_end(monkeypatch):
    # A server that ignores the cancel and never finishes: the drain gives
    # up and the connection is shut down rather than left mid-stream.
    monkeypatch.setattr(rawcopy, "DRAIN_TIMEOUT", 0.3)
    s = Script(msg(b"H", b"\1\0\0") + msg(b"d", payloads(1)[0]))
    try:
        g = stream_frames(s.conn, "COPY x TO STDOUT", raw=True)
        next(g)
        start = time.monotonic()
        g.close()
        assert time.monotonic() - start < 5
        assert s.conn.cancels == 1 and not s.conn.lock.locked()
        s.thread.join(5)
        assert not s.thread.is_alive()
        s.client.setblocking(True)
        assert s.client.recv(1) == b"", "the connection is shut down"
    finally:
        s.close()


def test_scripted_server_gone():
    s = Script(msg(b"H", b"\1\0\0") + msg(b"d", payloads(1)[0])[:20], hang_up=True)
    try:
        with pytest.raises(psycopg.OperationalError):
            list(rawcopy.stream_copy(s.conn, "COPY x TO STDOUT"))
        assert not s.conn.lock.locked() and s.conn.cancels == 0
    finally:
        s.close()


def test_usable():
    s = Script(b"")
    try:
        c = s.conn
        assert rawcopy.usable(c)
        c.autocommit = False
        assert not rawcopy.usable(c)
        c.autocommit = True
        c.info.transaction_status = 2  # INTRANS: a block the caller began
        assert rawcopy.usable(c)
        c.info.transaction_status = 3  # INERROR
        assert not rawcopy.usable(c)
        c.info.transaction_status = 1  # ACTIVE
        assert not rawcopy.usable(c)
        c.info.transaction_status = 0
        c.pgconn.ssl_in_use = True
        assert not rawcopy.usable(c)
        with pytest.raises(ValueError):
            next(stream_frames(c, "COPY x TO STDOUT", raw=True))
    finally:
        s.close()


# Against the server.

ROWS = 3000


@pytest.fixture(scope="module")
def db():
    if not DSN:
        pytest.skip("DEEPLAKED_DSN not set")
    d = deeplaked.connect(DSN)
    d.execute("DROP TABLE IF EXISTS rawcopy_rows")
    d.execute("CREATE TABLE rawcopy_rows (id int, txt text, emb vector(4), img bytea, label int, meta jsonb, "
              "t uint8[2][2], r float32[], b bfloat16[2], big bytea)")
    d.execute("INSERT INTO rawcopy_rows SELECT g, CASE WHEN g %% 7 = 0 THEN NULL ELSE 'row' || g END, "
              "('[' || g || ',1,2,3]')::vector, '\\xdead'::bytea, CASE WHEN g %% 3 = 0 THEN NULL ELSE g %% 5 END, "
              "('{\"g\": ' || g || '}')::jsonb, '{{1,2},{3,4}}'::uint8[2][2], "
              "CASE g %% 4 WHEN 0 THEN NULL WHEN 1 THEN ('{' || g || '}')::float32[] "
              "WHEN 2 THEN ('{' || g || ',1,2}')::float32[] ELSE '{}'::float32[] END, "
              "'{1.5,2}'::bfloat16[2], %s::bytea FROM generate_series(1, " + str(ROWS) + ") g",
              (bytes(range(256)) * 16,))
    yield d
    d.execute("DROP TABLE IF EXISTS rawcopy_rows")
    d.close()


def connect():
    return psycopg.connect(DSN, autocommit=True)


def same_frames(a, b):
    assert len(a) == len(b)
    for fa, fb in zip(a, b):
        assert (fa.batch_index, fa.rows, list(fa.columns)) == (fb.batch_index, fb.rows, list(fb.columns))
        assert fa.buffer.tobytes() == fb.buffer.tobytes()
        for name, ca in fa.columns.items():
            cb = fb.columns[name]
            assert (ca.kind, ca.dtype_code, ca.logical, ca.dims) == (cb.kind, cb.dtype_code, cb.logical, cb.dims)
            assert ca.valid().tolist() == cb.valid().tolist()
            va, vb = ca.to_numpy(), cb.to_numpy()
            if isinstance(va, list):
                assert len(va) == len(vb)
                for x, y in zip(va, vb):
                    assert (x == y) if not hasattr(x, "dtype") else (x.shape == y.shape and np.array_equal(x, y))
            else:
                assert va.dtype == vb.dtype and np.array_equal(va, vb)


@needs_server
def test_raw_frames_match_psycopg(db):
    with connect() as conn:
        assert rawcopy.usable(conn)
        for sql in (copy_sql("rawcopy_rows", batch_size=128),
                    copy_sql("SELECT id, txt, r, label, meta FROM rawcopy_rows WHERE id % 2 = 0", batch_size=33),
                    copy_sql("SELECT id FROM rawcopy_rows WHERE false")):
            raw = list(stream_frames(conn, sql, raw=True))
            ref = list(stream_frames(conn, sql, raw=False))
            same_frames(raw, ref)
            assert all(f.buffer.ctypes.data % ALIGN == 0 for f in raw)
        # Kept batches own their memory: later frames overwrote none of them.
        assert sum(f.rows for f in raw) == 0
        kept = list(stream_frames(conn, copy_sql("rawcopy_rows", batch_size=100), raw=True))
        ids = [int(i) for f in kept for i in f.columns["id"].to_numpy()]
        assert ids == list(range(1, ROWS + 1))
        assert all(v == bytes(range(256)) * 16 for f in kept for v in f.columns["big"].to_numpy())


@needs_server
def test_raw_error_mid_stream(db):
    sql = copy_sql("SELECT id, 1 / (id - 2500) AS x FROM rawcopy_rows", batch_size=16)
    with connect() as conn:
        for raw in (True, False):
            n = 0
            with pytest.raises(psycopg.errors.DivisionByZero) as e:
                for _ in stream_frames(conn, sql, raw=raw):
                    n += 1
            assert e.value.sqlstate == "22012" and n > 0
            # The connection is idle and usable afterwards, on both paths.
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert rawcopy.usable(conn)
        with pytest.raises(psycopg.errors.UndefinedTable) as e:
            list(stream_frames(conn, "COPY no_such_table TO STDOUT WITH (FORMAT tensor)", raw=True))
        assert e.value.sqlstate == "42P01" and 'relation "no_such_table" does not exist' in str(e.value)
        with pytest.raises(psycopg.ProgrammingError):
            list(stream_frames(conn, "SELECT 1", raw=True))
        assert len(list(stream_frames(conn, copy_sql("rawcopy_rows"), raw=True))) == -(-ROWS // 256)


@needs_server
def test_raw_early_break(db):
    sql = copy_sql("rawcopy_rows", batch_size=8)
    with connect() as conn:
        start = time.monotonic()
        g = stream_frames(conn, sql, raw=True)
        assert next(g).rows == 8
        g.close()
        assert time.monotonic() - start < 10
        assert conn.execute("SELECT 2").fetchone() == (2,)
        assert sum(f.rows for f in stream_frames(conn, sql, raw=True)) == ROWS
        # Dropped without close(): the same, when the generator is collected.
        for f in stream_frames(conn, sql):
            break
        del f
        assert conn.execute("SELECT 3").fetchone() == (3,)
    # Through the loader, whose epoch has a connection of its own.
    loader = db.dataloader("rawcopy_rows").columns(["id", "big"]).batch_size(64)
    for batch in loader:
        assert len(batch["id"]) == 64
        break
    assert sum(len(b["id"]) for b in loader) == ROWS
    it = iter(loader.to_torch())
    first = next(it)
    it.close()
    assert len(first["big"]) == 64 and first["id"].tolist() == list(range(1, 65))


@needs_server
def test_fallback_path(db, monkeypatch):
    sql = copy_sql("rawcopy_rows", batch_size=500)
    with connect() as conn:
        ref = list(stream_frames(conn, sql, raw=True))

    def refuse(conn, sql, **kw):
        raise AssertionError("the raw path ran")
        yield

    monkeypatch.setattr(rawcopy, "stream_copy", refuse)
    # In a transaction the connection is not idle: psycopg's copy runs.
    with psycopg.connect(DSN) as conn:
        conn.execute("SELECT 1")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert not rawcopy.usable(conn)
        same_frames(list(stream_frames(conn, sql)), ref)
        with pytest.raises(ValueError):
            next(stream_frames(conn, sql, raw=True))
    with connect() as conn:
        same_frames(list(stream_frames(conn, sql, raw=False)), ref)


@needs_server
def test_loader_takes_raw_path(db, monkeypatch):
    calls = []
    real = rawcopy.stream_copy

    def counted(conn, sql, **kw):
        calls.append(sql)
        return real(conn, sql, **kw)

    monkeypatch.setattr(rawcopy, "stream_copy", counted)
    assert sum(len(b["id"]) for b in db.dataloader("rawcopy_rows").columns(["id"])) == ROWS
    assert len(calls) == 1


@needs_server
def test_connection_held_while_streaming(db):
    sql = copy_sql("rawcopy_rows", batch_size=500)
    with connect() as conn:
        outer = stream_frames(conn, sql, raw=True)
        first = next(outer)
        with pytest.raises(psycopg.ProgrammingError):
            next(stream_frames(conn, sql))
        # Another thread waits for the connection until the stream ends.
        done = []
        t = threading.Thread(target=lambda: done.append(conn.execute("SELECT 5").fetchone()))
        t.start()
        t.join(0.3)
        assert not done
        assert first.rows + sum(f.rows for f in outer) == ROWS
        t.join(10)
        assert done == [(5,)]
