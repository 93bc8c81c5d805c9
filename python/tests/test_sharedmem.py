"""Shared-memory streams (SHARED_MEMORY, docs/tensor-stream.md "Shared
memory") read by deeplaked.rawcopy: against a scripted server on a Unix
socket pair that passes a memfd area and mixes references with inline
frames; then against a running server over its Unix socket
(DEEPLAKED_UNIX_DSN), batch for batch against TCP."""

import gc
import mmap
import os
import socket
import struct
import time

import numpy as np
import pytest

import deeplaked
from deeplaked import rawcopy
from deeplaked.frame import ALIGN, FrameError
from deeplaked.loader import copy_sql, stream_frames
from fakeserver import interrupt_after, FakeConn, Script, error_fields, msg
from framebuild import build_frame, column

psycopg = pytest.importorskip("psycopg")

if not hasattr(os, "memfd_create"):
    pytest.skip("no memfd_create", allow_module_level=True)

AREA_NAME = "deeplaked-test-area"


class Area:
    """The server's side of an area: a memfd with its control page, frames
    placed one after another from 4096 at multiples of 64, and references
    to them."""

    def __init__(self, size=1 << 20):
        self.size = size
        self.fd = os.memfd_create(AREA_NAME)
        os.ftruncate(self.fd, size)
        self.mm = mmap.mmap(self.fd, size)
        struct.pack_into("<4sHHQ", self.mm, 0, b"DLSM", 1, 0, size)
        self.next = 4096
        self.seq = 0

    def ref(self, frame, **override):
        """Place frame and return the CopyData message of its reference;
        override sets fields of the reference (magic, version, seq, offset,
        length, size)."""
        off = self.next
        self.mm[off:off + len(frame)] = frame
        self.next = off + -(-len(frame) // ALIGN) * ALIGN
        f = dict(magic=b"DLSR", version=1, flags=0, seq=self.seq, offset=off, length=len(frame), size=self.size)
        f.update(override)
        self.seq += 1
        return msg(b"d", struct.pack("<4sHHQQQQ", f["magic"], f["version"], f["flags"], f["seq"],
                                     f["offset"], f["length"], f["size"]))

    def released(self, seq):
        return struct.unpack_from("<Q", self.mm, 64 + 8 * (seq % 256))[0] == seq + 1

    def close(self):
        self.mm.close()
        os.close(self.fd)


def frame(i, rows=3):
    """Batch i: x int32 [rows] (i*100 + row), img uint8 [rows, 2, 4]."""
    x = struct.pack("<%di" % rows, *[i * 100 + r for r in range(rows)])
    img = bytes((i + k) % 256 for k in range(rows * 8))
    return build_frame(i, rows, [column("x", 0, 5, values=x), column("img", 0, 3, dims=(2, 4), values=img)])


def check(f, i, rows=3):
    assert f.batch_index == i and f.rows == rows
    assert f.columns["x"].to_numpy().tolist() == [i * 100 + r for r in range(rows)]
    img = f.columns["img"].to_numpy()
    assert img.shape == (rows, 2, 4)
    assert img.ravel().tolist() == [(i + k) % 256 for k in range(rows * 8)]
    assert f.buffer.ctypes.data % ALIGN == 0


def shared(buf):
    """Whether buf is a view of a mapped area (not a buffer of its own)."""
    return isinstance(buf.base, memoryview) and isinstance(buf.base.obj, mmap.mmap)


def open_fds(name=AREA_NAME):
    """The number of this process's descriptors of memfds called name."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += ("memfd:" + name + " ") in os.readlink("/proc/self/fd/" + fd) + " "
        except OSError:  # the directory's own descriptor, closed since
            pass
    return n


def area_maps():
    """The number of mappings of a test area in this process."""
    with open("/proc/self/maps") as m:
        return sum(AREA_NAME in line for line in m)


START = msg(b"H", b"\1\0\2\0\1\0\1")
END = msg(b"c") + msg(b"C", b"COPY 18\0") + msg(b"Z", b"I")
SQL = "COPY t TO STDOUT WITH (FORMAT tensor, SHARED_MEMORY true)"


def mixed(area, inline=(1, 4), n=6):
    """A stream of n batches, those in inline sent as frames, the others
    as references; returns the bytes and the position of the first
    reference."""
    out, first = START, None
    for i in range(n):
        if i in inline:
            out += msg(b"d", frame(i))
        else:
            if first is None:
                first = len(out)
            out += area.ref(frame(i))
    return out + END, first


def test_mixed_stream_and_release_on_drop():
    area = Area()
    out, first = mixed(area)
    s = Script(out, fds=(first, [area.fd]))
    try:
        fds, maps = open_fds(), area_maps()
        before = (rawcopy.stats.shared, rawcopy.stats.inline)
        got = []
        for k, f in enumerate(stream_frames(s.conn, SQL, raw=True, shared_memory=True)):
            check(f, k)
            got.append(f)
        assert (rawcopy.stats.shared - before[0], rawcopy.stats.inline - before[1]) == (4, 2)
        assert [shared(f.buffer) for f in got] == [True, False, True, True, False, True]
        assert s.query == (b"Q", SQL.encode() + b"\0")
        assert not s.client.getblocking() and not s.conn.lock.locked() and s.conn.cancels == 0
        # Refs 0..3 are batches 0, 2, 3, 5: all held, none released.
        assert not any(area.released(q) for q in range(4))
        assert area_maps() == maps + 1 and open_fds() == fds + 1  # the mapping keeps a descriptor
        # A batch is released once nothing refers to it: not the frame,
        # nor numpy views, nor tensors.
        x0 = got[0].columns["x"].to_numpy()
        img2 = got[2].columns["img"].to_numpy()[1:]
        got[0] = got[2] = f = None  # batches 0 and 2 (refs 0 and 1); f is batch 5
        gc.collect()
        assert not area.released(0) and not area.released(1)
        del x0
        gc.collect()
        assert area.released(0) and not area.released(1)
        torch = pytest.importorskip("torch")
        t_from_buffer = torch.frombuffer(img2, dtype=torch.uint8)
        t_from_numpy = torch.from_numpy(img2.reshape(-1))
        del img2
        gc.collect()
        assert not area.released(1)
        assert t_from_buffer[0].item() == (2 + 8) % 256
        del t_from_buffer
        gc.collect()
        assert not area.released(1)
        del t_from_numpy
        gc.collect()
        assert area.released(1) and not area.released(2)
        del got[:]
        gc.collect()
        assert all(area.released(q) for q in range(4))
        # Everything dropped: the client's mapping and descriptor are gone.
        assert area_maps() == maps and open_fds() == fds
    finally:
        s.close()
        area.close()


def test_views_are_the_area():
    # What the client reads is the area itself: bytes the server writes
    # into a frame's place show through a held batch (the server never
    # does this to a frame that is out; here it proves there is no copy).
    torch = pytest.importorskip("torch")
    area = Area()
    out, first = mixed(area, inline=(), n=1)
    s = Script(out, fds=(first, [area.fd]))
    try:
        (f,) = list(stream_frames(s.conn, SQL, raw=True, shared_memory=True))
        x = f.columns["x"].to_numpy()
        t = torch.from_numpy(x)
        off = 4096 + (x.ctypes.data - f.buffer.ctypes.data)
        struct.pack_into("<i", area.mm, off, -5)
        assert x[0] == -5 and t[0].item() == -5
    finally:
        s.close()
        area.close()


def test_release_as_the_consumer_moves_on():
    # A consumer that keeps nothing: by the time batch k arrives, every
    # reference before it is released, and none after.
    area = Area()
    out, first = mixed(area, inline=(3,), n=8)
    s = Script(out, fds=(first, [area.fd]))
    try:
        refs = [i for i in range(8) if i != 3]
        for k, f in enumerate(stream_frames(s.conn, SQL, raw=True, shared_memory=True)):
            check(f, k)
            done = [area.released(q) for q in range(len(refs))]
            assert done == [refs[q] < k for q in range(len(refs))], (k, done)
        del f
        gc.collect()
        assert all(area.released(q) for q in range(len(refs)))
    finally:
        s.close()
        area.close()


def test_forked_child_releases_nothing():
    # A forked process (a DataLoader worker) shares the mapping: its
    # copies of the parent's batches going away release nothing.
    area = Area()
    out, first = mixed(area, inline=(), n=2)
    s = Script(out, fds=(first, [area.fd]))
    try:
        got = list(stream_frames(s.conn, SQL, raw=True, shared_memory=True))
        pid = os.fork()
        if pid == 0:
            del got[:]
            gc.collect()
            os._exit(0)
        assert os.waitpid(pid, 0)[1] == 0
        assert not area.released(0) and not area.released(1)
        del got[:]
        gc.collect()
        assert area.released(0) and area.released(1)
    finally:
        s.close()
        area.close()


def test_forked_child_keeps_its_copy():
    # The server goes on writing into the area once the parent releases a
    # frame; a forked child's inherited batch keeps the bytes it had.
    area = Area()
    out, first = mixed(area, inline=(), n=2)
    s = Script(out, fds=(first, [area.fd]))
    try:
        got = list(stream_frames(s.conn, SQL, raw=True, shared_memory=True))
        before = [f.columns["img"].to_numpy().copy() for f in got]
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(w)
            os.read(r, 1)  # the server has written over the frames
            same = all(np.array_equal(f.columns["img"].to_numpy(), b) for f, b in zip(got, before))
            os._exit(0 if same else 1)
        os.close(r)
        # As the server reusing released space: new bytes over the frames.
        area.mm[4096:] = b"\xee" * (len(area.mm) - 4096)
        assert not all(np.array_equal(f.columns["img"].to_numpy(), b) for f, b in zip(got, before))
        os.write(w, b"x")
        os.close(w)
        assert os.waitpid(pid, 0)[1] == 0, "the child's batches changed with the area"
    finally:
        s.close()
        area.close()


def test_seq_wraps_the_released_slots():
    # More references than the 256 slots: entry seq mod 256 holds seq + 1.
    area = Area(4 << 20)
    out = START
    first = len(out)
    for i in range(300):
        out += area.ref(frame(i, rows=1))
    s = Script(out + END, chunk=1 << 16, fds=(first, [area.fd]))
    try:
        n = 0
        for k, f in enumerate(stream_frames(s.conn, SQL, raw=True, shared_memory=True)):
            check(f, k, rows=1)
            n += 1
        assert n == 300
        del f
        gc.collect()
        assert all(area.released(q) for q in range(44, 300))
    finally:
        s.close()
        area.close()


def bad_stream(area, which):
    """A stream whose reference is bad in the way named, and the position
    of the reference that carries the descriptor (None: no descriptor)."""
    out = START
    first = len(out)
    if which == "no descriptor":
        return out + area.ref(frame(0)) + END, None
    if which == "offset out of range":
        r = area.ref(frame(0), offset=area.size - 64)
    elif which == "length out of range":
        r = area.ref(frame(0), length=area.size)
    elif which == "offset in the control page":
        r = area.ref(frame(0), offset=0)
    elif which == "offset not aligned":
        r = area.ref(frame(0), offset=4096 + 8)
    elif which == "version":
        r = area.ref(frame(0), version=2)
    elif which == "size":
        r = area.ref(frame(0), size=area.size // 2)
    elif which == "seq":
        r = area.ref(frame(0), seq=1)
    elif which == "length of the message":
        r = msg(b"d", area.ref(frame(0))[5:] + b"\0" * 8)
    elif which == "size changes":
        r = area.ref(frame(0)) + area.ref(frame(1), size=area.size * 2)
    elif which == "control page":
        area.mm[0:4] = b"XXXX"
        r = area.ref(frame(0))
    return out + r + msg(b"d", frame(9)) + END, first


@pytest.mark.parametrize("which", ["no descriptor", "offset out of range", "length out of range",
                                   "offset in the control page", "offset not aligned", "version", "size",
                                   "seq", "length of the message", "size changes", "control page"])
def test_bad_reference(which):
    area = Area()
    out, first = bad_stream(area, which)
    s = Script(out, fds=None if first is None else (first, [area.fd]))
    try:
        fds, maps = open_fds(), area_maps()
        got = []
        start = time.monotonic()
        with pytest.raises(psycopg.OperationalError):
            for f in stream_frames(s.conn, SQL, raw=True, shared_memory=True):
                got.append(f)
        assert time.monotonic() - start < 5
        assert len(got) == (1 if which == "size changes" else 0)
        # The place in the stream is given up: no cancel, the connection
        # is shut down, the lock is free.
        assert s.conn.cancels == 0 and not s.conn.lock.locked()
        with pytest.raises(BrokenPipeError):
            s.client.send(b"Q")
        del got[:]
        f = None
        gc.collect()
        assert open_fds() == fds and area_maps() == maps
    finally:
        s.close()
        area.close()


@pytest.mark.parametrize("chunk", [7, 45, 46, 1 << 20])
def test_header_reads_take_the_reference(chunk, monkeypatch):
    # A header's read takes the 40 bytes after it as well: a reference
    # arrives with one recvmsg, and the inline frames' bodies, split
    # anywhere, come out whole.
    area = Area()
    out, first = mixed(area)
    s = Script(out, chunk=chunk, fds=(first, [area.fd]))
    calls = [0]
    recv = rawcopy._SharedReader._recv

    def counting(self, mv):
        calls[0] += 1
        return recv(self, mv)

    monkeypatch.setattr(rawcopy._SharedReader, "_recv", counting)
    try:
        got = list(stream_frames(s.conn, SQL, raw=True, shared_memory=True))
        for k, f in enumerate(got):
            check(f, k)
        assert [shared(f.buffer) for f in got] == [True, False, True, True, False, True]
        if chunk == 1 << 20:
            # 10 messages (CopyOutResponse, 4 references, 2 frames,
            # CopyDone, CommandComplete, ReadyForQuery), a frame's body
            # taking a second read: one read per header otherwise.
            assert calls[0] <= 12
        assert not s.conn.lock.locked() and s.conn.cancels == 0
    finally:
        got = None
        s.close()
        area.close()


@pytest.mark.parametrize("how", ["read to the end", "closed early", "after an error"])
def test_bytes_after_ready_for_query(how):
    # A server that sends a message after ReadyForQuery unasked: the read
    # ahead took it from libpq, so the connection is given up, whether the
    # stream is read to its end or drained after the consumer stopped.
    # The server's own error comes first.
    area = Area()
    if how == "after an error":
        out = (START + area.ref(frame(0)) + msg(b"E", error_fields("57P01", "terminating connection"))
               + msg(b"Z", b"I"))
        first = len(START)
    else:
        out, first = mixed(area)
    s = Script(out + msg(b"N", b"SNOTICE\0\0"), chunk=1 << 20, fds=(first, [area.fd]))
    try:
        g = stream_frames(s.conn, SQL, raw=True, shared_memory=True)
        if how == "closed early":
            next(g)
            g.close()
        elif how == "after an error":
            with pytest.raises(psycopg.errors.AdminShutdown):
                list(g)
        else:
            with pytest.raises(psycopg.OperationalError, match="after ReadyForQuery"):
                list(g)
        assert not s.conn.lock.locked()
        with pytest.raises(BrokenPipeError):
            s.client.send(b"Q")
    finally:
        g = None
        s.close()
        area.close()
        gc.collect()


def test_unknown_magic_is_a_bad_frame():
    # A 40-byte payload that is not a reference is a frame: the frame's
    # parser refuses it, and the stream is drained (canceled) as after any
    # error of the consumer's.
    area = Area()
    out = START + area.ref(frame(0)) + msg(b"d", b"DLSX" + b"\0" * 36) + area.ref(frame(2)) + msg(
        b"E", error_fields("57014", "canceling statement due to user request")) + msg(b"Z", b"I")
    s = Script(out, fds=(len(START), [area.fd]))
    try:
        g = stream_frames(s.conn, SQL, raw=True, shared_memory=True)
        check(next(g), 0)
        with pytest.raises(FrameError):
            next(g)
        assert s.conn.cancels == 1 and not s.conn.lock.locked()
        s.client.setblocking(False)
        with pytest.raises(BlockingIOError):
            s.client.recv(1)  # drained to ReadyForQuery
        gc.collect()
        assert area.released(0) and area.released(1), "the reference read while draining is released"
    finally:
        s.close()
        area.close()


def test_too_many_descriptors():
    # More descriptors than the read makes room for (MSG_CTRUNC): an error,
    # and those that came are closed.
    area = Area()
    out, first = mixed(area, inline=(), n=2)
    s = Script(out, fds=(first, [area.fd] * 40))
    try:
        fds = open_fds()
        with pytest.raises(psycopg.OperationalError, match="file descriptors"):
            list(stream_frames(s.conn, SQL, raw=True, shared_memory=True))
        gc.collect()
        assert open_fds() == fds and not s.conn.lock.locked()
    finally:
        s.close()
        area.close()


def test_extra_descriptors_are_closed():
    area = Area()
    other = os.memfd_create("other")
    out, first = mixed(area, inline=(2,), n=4)
    s = Script(out, fds=(first, [area.fd, other]))
    try:
        fds = open_fds(), open_fds("other")
        got = list(stream_frames(s.conn, SQL, raw=True, shared_memory=True))
        for k, f in enumerate(got):
            check(f, k)
        assert (open_fds(), open_fds("other")) == (fds[0] + 1, fds[1])
        del got, f
        gc.collect()
        assert (open_fds(), open_fds("other")) == fds
    finally:
        s.close()
        area.close()
        os.close(other)


def test_descriptor_without_references():
    # The descriptor came but no reference did (the statement failed): it
    # is closed when the stream ends.
    area = Area()
    out = START + msg(b"d", frame(0)) + msg(b"E", error_fields("22012", "division by zero")) + msg(b"Z", b"I")
    s = Script(out, fds=(len(START), [area.fd]))
    try:
        fds = open_fds()
        got = []
        with pytest.raises(psycopg.errors.DivisionByZero):
            for f in stream_frames(s.conn, SQL, raw=True, shared_memory=True):
                got.append(f)
        check(got[0], 0)
        assert open_fds() == fds and s.conn.cancels == 0
    finally:
        s.close()
        area.close()


def test_reference_after_error_is_released():
    area = Area()
    out = (START + area.ref(frame(0)) + msg(b"E", error_fields("22012", "division by zero"))
           + area.ref(frame(1)) + msg(b"Z", b"I"))
    s = Script(out, fds=(len(START), [area.fd]))
    try:
        got = []
        with pytest.raises(psycopg.errors.DivisionByZero):
            for f in stream_frames(s.conn, SQL, raw=True, shared_memory=True):
                got.append(f)
        check(got[0], 0)
        assert area.released(1) and not area.released(0)
        del got[:], f
        gc.collect()
        assert area.released(0)
    finally:
        s.close()
        area.close()


def test_early_close_drains_and_releases():
    area = Area()
    out, first = mixed(area, inline=(2,), n=6)
    out = out[:-len(END)] + msg(b"E", error_fields("57014", "canceling statement due to user request")) + msg(b"Z", b"I")
    s = Script(out, fds=(first, [area.fd]))
    try:
        g = stream_frames(s.conn, SQL, raw=True, shared_memory=True)
        kept = next(g)
        g.close()
        assert s.conn.cancels == 1 and not s.conn.lock.locked()
        s.client.setblocking(False)
        with pytest.raises(BlockingIOError):
            s.client.recv(1)
        check(kept, 0)
        assert not area.released(0) and all(area.released(q) for q in range(1, 5))
        del kept
        gc.collect()
        assert area.released(0)
    finally:
        s.close()
        area.close()


@pytest.mark.parametrize("where", [2, 5 + 20])  # in the header, in the reference's body
def test_interrupt_mid_reference(where):
    area = Area()
    head = START + area.ref(frame(0))
    out = (head + area.ref(frame(1)) + area.ref(frame(2))
           + msg(b"E", error_fields("57014", "canceling statement due to user request")) + msg(b"Z", b"I"))
    s = Script(out, chunk=1, pause_at=len(head) + where, fds=(len(START), [area.fd]))

    try:
        g = stream_frames(s.conn, SQL, raw=True, shared_memory=True)
        kept = next(g)
        with pytest.raises(KeyboardInterrupt), interrupt_after(0.3):
            next(g)
        assert s.conn.cancels == 1 and not s.conn.lock.locked()
        s.thread.join(5)
        s.client.setblocking(False)
        with pytest.raises(BlockingIOError):
            s.client.recv(1)
        assert area.released(1) and area.released(2) and not area.released(0)
        check(kept, 0)
    finally:
        s.close()
        area.close()


def test_interrupt_before_the_first_reference():
    # Interrupted while waiting for the first batch: the drain meets the
    # first reference, maps the area to release it, and reads on to
    # ReadyForQuery; the connection stays usable.
    area = Area()
    out = (START + area.ref(frame(0)) + area.ref(frame(1))
           + msg(b"E", error_fields("57014", "canceling statement due to user request")) + msg(b"Z", b"I"))
    s = Script(out, chunk=1, pause_at=len(START), fds=(len(START), [area.fd]))

    try:
        g = stream_frames(s.conn, SQL, raw=True, shared_memory=True)
        with pytest.raises(KeyboardInterrupt), interrupt_after(0.3):
            next(g)
        assert s.conn.cancels == 1 and not s.conn.lock.locked()
        s.thread.join(5)
        s.client.setblocking(False)
        with pytest.raises(BlockingIOError):  # drained, not shut down
            s.client.recv(1)
        assert area.released(0) and area.released(1)
    finally:
        s.close()
        area.close()


def test_plain_stream_reads_without_recvmsg(monkeypatch):
    # Without shared_memory the reader is the plain one: recv_into, no
    # control buffer.
    called = []
    real = socket.socket.recvmsg_into

    def spy(self, *a, **kw):
        called.append(1)
        return real(self, *a, **kw)

    monkeypatch.setattr(socket.socket, "recvmsg_into", spy)
    out = START + msg(b"d", frame(0)) + END
    s = Script(out)
    try:
        (f,) = list(stream_frames(s.conn, "COPY t TO STDOUT WITH (FORMAT tensor)", raw=True))
        check(f, 0)
        assert not called and not shared(f.buffer)
    finally:
        s.close()


def test_shared_memory_needs_the_raw_path():
    a, b = socket.socketpair()
    with a, b:
        conn = FakeConn(a)
        with pytest.raises(ValueError):
            next(stream_frames(conn, SQL, raw=False, shared_memory=True))
        conn.autocommit = False
        with pytest.raises(ValueError):
            next(stream_frames(conn, SQL, shared_memory=True))


def test_unix_socket():
    a, b = socket.socketpair()
    with a, b, socket.socket() as tcp:
        conn = FakeConn(a)
        assert rawcopy.unix_socket(conn)
        conn.pgconn.socket = tcp.fileno()
        assert not rawcopy.unix_socket(conn)
        conn.pgconn.socket = -1
        assert not rawcopy.unix_socket(conn)
        conn.pgconn.socket = a.fileno()
        assert a.fileno() >= 0 and rawcopy.unix_socket(conn), "the descriptor is left open"


def test_sql_option():
    from deeplaked.loader import DataLoader
    assert copy_sql("t", shared_memory=True) == "COPY t TO STDOUT WITH (FORMAT tensor, SHARED_MEMORY true)"
    assert copy_sql("t", shared_memory=1 << 20) == "COPY t TO STDOUT WITH (FORMAT tensor, SHARED_MEMORY 1048576)"
    assert copy_sql("t", shared_memory=False) == "COPY t TO STDOUT WITH (FORMAT tensor)"
    l = DataLoader(None, "t")
    assert l._shared_memory is True and "SHARED" not in l.sql()
    assert l.shared_memory(False)._shared_memory is False
    assert l.shared_memory(4 << 20).sql(shared_memory=4 << 20).endswith("SHARED_MEMORY 4194304)")
    assert l.shared_memory(0)._shared_memory is False
    assert l.shared_memory(np.True_)._shared_memory is True
    for bad in (1000, (4 << 30) + 1):
        with pytest.raises(ValueError):
            l.shared_memory(bad)


# Against the server, over its Unix socket.

UNIX_DSN = os.environ.get("DEEPLAKED_UNIX_DSN")
DSN = os.environ.get("DEEPLAKED_DSN")
ROWS = 5000


def _img_sql():
    """uint8[3][32][32] for row g: plane k holds (g + k) mod 251. A batch
    of 32 rows or more makes a frame of 96 KiB or more: the server places
    frames of 64 KiB and more in the area."""
    def r32(v):
        return "'{' || %s || repeat(',' || %s, 31) || '}'" % (v, v)

    def plane(v):
        return "'{' || %s || repeat(',' || %s, 31) || '}'" % (r32(v), r32(v))
    planes = tuple(plane("((g + %d) %% 251)::text" % k) for k in range(3))
    return "('{' || %s || ',' || %s || ',' || %s || '}')::uint8[3][32][32]" % planes


def expected_img(g):
    return np.repeat(np.array([(g + k) % 251 for k in range(3)], dtype=np.uint8), 1024).reshape(3, 32, 32)


@pytest.fixture(scope="module")
def udb():
    if not (UNIX_DSN and DSN):
        pytest.skip("DEEPLAKED_UNIX_DSN and DEEPLAKED_DSN not set")
    d = deeplaked.connect(UNIX_DSN)
    d.execute("DROP TABLE IF EXISTS shm_rows")
    d.execute("CREATE TABLE shm_rows (id int, img uint8[3][32][32], txt text, n int)")
    d.execute("INSERT INTO shm_rows SELECT g, " + _img_sql() + ", CASE WHEN g % 5 = 0 THEN NULL ELSE 'row' || g END, "
              "g % 7 FROM generate_series(1, " + str(ROWS) + ") g")
    d.execute("VACUUM shm_rows")
    yield d
    d.execute("DROP TABLE IF EXISTS shm_rows")
    d.close()


@pytest.fixture(scope="module")
def tcp():
    d = deeplaked.connect(DSN)
    yield d
    d.close()


def in_area(arr):
    """Whether a numpy array's memory is a mapped shared area's."""
    b = arr
    while isinstance(b, np.ndarray):
        b = b.base
    return isinstance(b, memoryview) and isinstance(b.obj, mmap.mmap)


def memfd_ranges():
    """The address ranges of this process's memfd mappings."""
    out = []
    with open("/proc/self/maps") as m:
        for line in m:
            if "/memfd:" in line:
                lo, hi = line.split()[0].split("-")
                out.append((int(lo, 16), int(hi, 16)))
    return out


def same_batches(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert list(x) == list(y)
        for k in x:
            if isinstance(x[k], list):
                assert x[k] == y[k], k
            else:
                xa, ya = np.asarray(x[k]), np.asarray(y[k])
                assert xa.dtype == ya.dtype and np.array_equal(xa, ya), k


def test_loader_unix_matches_tcp(udb, tcp):
    for make in (lambda d: d.dataloader("shm_rows").batch_size(64),
                 lambda d: d.dataloader("shm_rows").batch_size(100).shuffle(True, seed=3).with_validity(),
                 lambda d: d.dataloader("shm_rows").filter("n = 3").columns(["img", "txt"]).batch_size(77)):
        before = rawcopy.stats.shared
        over_unix = list(make(udb))
        assert rawcopy.stats.shared > before, "frames came through the shared area"
        assert any(in_area(b["img"]) for b in over_unix)
        assert all(rawcopy.area_of(b["img"]) is not None for b in over_unix if in_area(b["img"]))
        shared_before = rawcopy.stats.shared
        over_tcp = list(make(tcp))
        assert rawcopy.stats.shared == shared_before
        assert not any(in_area(b["img"]) for b in over_tcp)
        assert all(rawcopy.area_of(b["img"]) is None for b in over_tcp)
        same_batches(over_unix, over_tcp)
    batches = list(udb.dataloader("shm_rows").batch_size(500))
    ids = [int(i) for b in batches for i in b["id"]]
    assert ids == list(range(1, ROWS + 1))
    for b in batches:
        for i, img, txt in zip(b["id"], b["img"], b["txt"]):
            assert np.array_equal(img, expected_img(int(i)))
            assert txt == (None if i % 5 == 0 else "row%d" % i)


def test_frames_are_the_frames_the_socket_carries(udb):
    # A referenced frame is byte for byte the frame CopyData would carry.
    with psycopg.connect(UNIX_DSN, autocommit=True) as conn:
        assert rawcopy.unix_socket(conn) and conn.info.host.startswith("/")
        before = rawcopy.stats.shared
        shm = list(stream_frames(conn, copy_sql("shm_rows", batch_size=300, shared_memory=True), shared_memory=True))
        assert rawcopy.stats.shared > before
        plain = list(stream_frames(conn, copy_sql("shm_rows", batch_size=300), raw=True))
        assert len(shm) == len(plain) == -(-ROWS // 300)
        for a, b in zip(shm, plain):
            assert a.buffer.tobytes() == b.buffer.tobytes()
            assert a.buffer.ctypes.data % ALIGN == 0
        assert conn.execute("SELECT count(*) FROM shm_rows").fetchone() == (ROWS,)


def test_released_frames_make_room(udb):
    # A consumer that drops each batch releases it: the 1 MiB area carries
    # several times its size of frames.
    with psycopg.connect(UNIX_DSN, autocommit=True) as conn:
        through_area = 0
        for f in stream_frames(conn, copy_sql("shm_rows", batch_size=64, shared_memory=1 << 20), shared_memory=True):
            if in_area(f.buffer):
                through_area += len(f.buffer)
        assert through_area > 3 << 20


def test_kept_batches_stay_intact(udb, tcp):
    # A consumer that keeps every batch holds the 1 MiB area full: the
    # server sends the rest inline, and no kept batch is overwritten.
    before = (rawcopy.stats.shared, rawcopy.stats.inline)
    kept = list(udb.dataloader("shm_rows").batch_size(64).shared_memory(1 << 20))
    shared, inline = rawcopy.stats.shared - before[0], rawcopy.stats.inline - before[1]
    assert shared > 0 and inline > 0 and shared + inline == len(kept) == -(-ROWS // 64)
    # Streams run meanwhile reuse their own areas' space, not the kept
    # batches' memory.
    for _ in udb.dataloader("shm_rows").batch_size(64).shared_memory(1 << 20):
        pass
    same_batches(kept, list(tcp.dataloader("shm_rows").batch_size(64)))


def test_torch_batches_wrap_the_area(udb, tcp):
    # .to_torch() tensors are the area's memory (no copy); a tensor kept
    # while the stream goes on (the area reused, 1 MiB for 4.4 MB of
    # frames) keeps its frame from being released and overwritten.
    torch = pytest.importorskip("torch")
    loader = udb.dataloader("shm_rows").batch_size(64).shared_memory(1 << 20).to_torch()
    kept, wrapped = [], 0
    for k, b in enumerate(loader):
        assert isinstance(b["img"], torch.Tensor) and b["img"].shape[1:] == (3, 32, 32)
        ptr = b["img"].data_ptr()
        if any(lo <= ptr < hi for lo, hi in memfd_ranges()):
            wrapped += 1
        if k % 10 == 0:
            kept.append((k, b["img"], b["id"]))
    assert wrapped > 0
    ref = list(tcp.dataloader("shm_rows").batch_size(64))
    for k, img, ids in kept:
        assert torch.equal(img, torch.from_numpy(ref[k]["img"])) and torch.equal(ids, torch.from_numpy(ref[k]["id"]))


@pytest.mark.parametrize("pin", [True, False])
def test_to_cuda_through_the_area(udb, tcp, pin):
    # Batches copied from the area to a CUDA device with non-blocking
    # copies, every one kept on the device while the stream reuses the
    # 1 MiB area (4.4 MB of frames) and the GPU lags behind: each equals
    # the rows over TCP, so no copy read a frame after the server wrote
    # the next one over it.
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine: the device placement is not exercised")
    from deeplaked import device
    loader = udb.dataloader("shm_rows").batch_size(64).shared_memory(1 << 20).to_torch(device="cuda", pin_memory=pin)
    it = iter(loader)  # a stream left early unregisters its area
    next(it), next(it)
    it.close()
    before, direct = rawcopy.stats.shared, device.stats.direct
    kept = []
    for b in loader:
        kept.append(b)
        # The GPU kept busy (about a millisecond): the next frame's copy
        # waits behind this, and its frame must stay held until it is done.
        torch.cuda._sleep(2_000_000)
    assert rawcopy.stats.shared - before > 20
    # Every frame placed in the area was copied to the device straight
    # from it (the area registered with CUDA).
    assert device.stats.direct - direct == rawcopy.stats.shared - before
    ref = list(tcp.dataloader("shm_rows").batch_size(64))
    assert len(kept) == len(ref)
    for g, c in zip(kept, ref):
        for name in ("id", "img", "n"):
            assert g[name].device.type == "cuda"
            assert torch.equal(g[name].cpu(), torch.from_numpy(c[name])), name
        assert g["txt"] == c["txt"]


def test_early_close_leaves_the_connection_usable(udb):
    sql = copy_sql("shm_rows", batch_size=32, shared_memory=True)
    with psycopg.connect(UNIX_DSN, autocommit=True) as conn:
        g = stream_frames(conn, sql, shared_memory=True)
        first = next(g)
        second = next(g)
        start = time.monotonic()
        g.close()
        assert time.monotonic() - start < 10
        assert conn.execute("SELECT 2").fetchone() == (2,)
        assert first.columns["id"].to_numpy().tolist() == list(range(1, 33))
        assert second.columns["id"].to_numpy().tolist() == list(range(33, 65))
        assert sum(f.rows for f in stream_frames(conn, sql, shared_memory=True)) == ROWS
        # A server error mid-stream: raised, the connection usable.
        bad = copy_sql("SELECT id, 1 / (id - 3000) AS x FROM shm_rows", batch_size=16, shared_memory=True)
        n = 0
        with pytest.raises(psycopg.errors.DivisionByZero):
            for _ in stream_frames(conn, bad, shared_memory=True):
                n += 1
        assert n > 0 and conn.execute("SELECT 3").fetchone() == (3,)
    it = iter(udb.dataloader("shm_rows").batch_size(10))
    assert next(it)["id"].tolist() == list(range(1, 11))
    it.close()


def test_option_errors(udb):
    with psycopg.connect(DSN, autocommit=True) as conn:  # TCP
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            list(stream_frames(conn, copy_sql("shm_rows", shared_memory=True), shared_memory=True))
        assert conn.execute("SELECT 1").fetchone() == (1,)
    with psycopg.connect(UNIX_DSN, autocommit=True) as conn:
        for size in (1000, (4 << 30) + 1):
            with pytest.raises(psycopg.errors.InvalidParameterValue):
                list(stream_frames(conn, copy_sql("shm_rows", shared_memory=size), shared_memory=True))
        with pytest.raises(psycopg.errors.FeatureNotSupported):  # not FORMAT tensor
            list(stream_frames(conn, "COPY shm_rows TO STDOUT WITH (SHARED_MEMORY true)", shared_memory=True))
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_shared_memory_off(udb, tcp):
    before = rawcopy.stats.shared
    got = list(udb.dataloader("shm_rows").batch_size(1000).shared_memory(False))
    assert rawcopy.stats.shared == before and not any(in_area(b["img"]) for b in got)
    same_batches(got, list(tcp.dataloader("shm_rows").batch_size(1000)))


def test_snapshot_over_shared_memory(udb):
    # In the transaction block that reads an exported snapshot, too.
    with udb.export_snapshot() as snap:
        before = rawcopy.stats.shared
        got = [int(i) for b in udb.dataloader("shm_rows").batch_size(64).snapshot(snap) for i in b["id"]]
        assert got == list(range(1, ROWS + 1)) and rawcopy.stats.shared > before


def test_dataloader_workers(udb):
    # Each worker's connection gets an area of its own; every row comes
    # once.
    torch = pytest.importorskip("torch")
    loader = udb.dataloader("shm_rows").columns(["id", "img"]).batch_size(100).to_torch()

    class Counted(torch.utils.data.IterableDataset):
        """The loader's batches, with the worker's count of references."""

        def __iter__(self):
            start = rawcopy.stats.shared  # a forked worker starts with the parent's count
            for b in loader:
                yield {"id": b["id"], "img": b["img"], "shared": torch.tensor(rawcopy.stats.shared - start)}

    ids, shared = [], []
    for b in torch.utils.data.DataLoader(Counted(), batch_size=None, num_workers=2):
        ids += b["id"].tolist()
        shared.append(int(b["shared"]))
        assert torch.equal(b["img"][0], torch.from_numpy(expected_img(int(b["id"][0]))))
    assert sorted(ids) == list(range(1, ROWS + 1))
    assert max(shared) > 0


def test_wide_rows_shuffled_match_tcp(udb, tcp):
    """Images of 12 KiB, one to a checksum block: through shared memory
    the server reads them from the chunk files straight into the frames,
    in order and through the shuffle buffer (whose slots then hold where
    each image is stored); the batches must be those over TCP."""
    udb.execute("DROP TABLE IF EXISTS shm_wide")
    udb.execute("CREATE TABLE shm_wide (id int, img uint8[3][64][64], n int) WITH (chunk_size = '256kB', compression = 'none')")
    udb.execute("INSERT INTO shm_wide SELECT g, ('{' || rtrim(repeat('{' || rtrim(repeat('{' || rtrim(repeat((g % 251)::text || ',', 64), ',') || '},', 64), ',') || '},', 3), ',') || '}')::uint8[3][64][64], g % 7 "
                "FROM generate_series(1, 600) g")
    udb.execute("DELETE FROM shm_wide WHERE id % 41 = 0")
    udb.execute("VACUUM shm_wide")
    try:
        for make in (lambda d: d.dataloader("shm_wide").batch_size(64),
                     lambda d: d.dataloader("shm_wide").batch_size(50).shuffle(True, seed=11),
                     lambda d: d.dataloader("shm_wide").columns(["img", "n"]).batch_size(32).shuffle(True, seed=12).shard(1, 2)):
            before = rawcopy.stats.shared
            over_unix = list(make(udb))
            assert rawcopy.stats.shared > before
            over_tcp = list(make(tcp))
            same_batches(over_unix, over_tcp)
            if "id" in over_unix[0]:
                for b in over_unix:
                    for i, img in zip(b["id"], b["img"]):
                        assert int(img[0, 0, 0]) == int(i) % 251 and int(img[2, 63, 63]) == int(i) % 251
    finally:
        udb.execute("DROP TABLE IF EXISTS shm_wide")
