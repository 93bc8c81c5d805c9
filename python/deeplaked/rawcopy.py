"""COPY ... TO STDOUT read straight off a psycopg connection's socket.

Through psycopg, each CopyData message is copied three times: by libpq into
a buffer of its own, by psycopg into Python bytes, and by parse_frame into
a 64-byte aligned buffer. Here the client sends the simple-protocol Query
itself on a duplicate of the connection's socket and receives each CopyData
payload straight into a fresh aligned buffer: the kernel's copy is the only
one.

libpq is left out of the exchange and stays consistent because the exchange
starts and ends where libpq left the connection: after a ReadyForQuery,
with nothing of its own outstanding. So the raw path is taken only on a
plain (not SSL) connection in autocommit mode (out of autocommit psycopg
would open a transaction first), not in pipeline mode, and idle or in a
transaction block the caller opened with its own BEGIN (a loader reading
an exported snapshot), whose status the COPY leaves as it was (usable).

With shared memory (the SHARED_MEMORY option, over a Unix socket: see
docs/tensor-stream.md, "Shared memory") the server places frames in an
area it shares with the client and sends 40-byte references to them; the
client maps the area and hands out views of it, each released to the
server once its last user is gone.
"""

import array
import mmap
import os
import socket
import struct
import threading
import time
import weakref

import numpy as np

from .frame import ALIGN, aligned_empty

_HEADER = struct.Struct("!cI")  # message type, length (itself included)
_SKIP_CHUNK = 1 << 16
# How long an abandoned stream may take to reach ReadyForQuery after the
# cancel before the connection is given up instead.
DRAIN_TIMEOUT = 30.0
_IDLE = 0  # psycopg.pq.TransactionStatus.IDLE
_INTRANS = 2  # psycopg.pq.TransactionStatus.INTRANS
# id(connection) → the thread streaming a COPY on it, while the stream holds
# the connection's lock.
_streaming = {}

# The shared area's control page and references (docs/tensor-stream.md,
# "Shared memory").
AREA_MAGIC = b"DLSM"
REF_MAGIC = b"DLSR"
SHARED_VERSION = 1
CONTROL_PAGE = 4096
RELEASED_SLOTS = 256
_REF = struct.Struct("<4sHHQQQQ")  # magic, version, flags, seq, offset, length, size
_AREA = struct.Struct("<4sHHQ")  # magic, version, reserved, size
# Descriptors one read makes room for: the server sends one, once; more
# are closed, and more than fit end the stream (MSG_CTRUNC).
_MAX_FDS = 4
_RECV_FLAGS = int(getattr(socket, "MSG_CMSG_CLOEXEC", 0))
_MSG_CTRUNC = int(socket.MSG_CTRUNC)  # an int: the enum's & is slow


class Stats:
    """Counts of the CopyData payloads that shared-memory streams
    received in this process: shared, references to frames in a shared
    area; inline, frames sent in the message itself (the server's
    fallback when its area is full). For tests and diagnostics: a worker
    process counts its own, and threads streaming at once may miss a
    count."""

    __slots__ = ("shared", "inline")

    def __init__(self):
        self.shared = self.inline = 0


stats = Stats()


def usable(conn):
    """Whether stream_copy can run on conn (see the module's comment).

    NB: GSSAPI encryption is not checked for (psycopg does not say): the
    deeplaked server refuses GSSENCRequest, so its connections never have
    it."""
    if os.name != "posix":  # sockets are not file descriptors to dup
        return False
    try:
        pgconn = conn.pgconn
        return (not conn.closed and conn.autocommit and not pgconn.ssl_in_use
                and conn.info.transaction_status in (_IDLE, _INTRANS)
                and getattr(pgconn, "pipeline_status", 0) == 0
                and pgconn.socket >= 0)
    except Exception:  # a closed or broken connection: psycopg's path says why
        return False


def unix_socket(conn):
    """Whether conn is connected over a Unix socket (where SHARED_MEMORY
    can pass its area)."""
    try:
        s = socket.socket(fileno=conn.pgconn.socket)
    except Exception:  # closed, or not a socket
        return False
    try:
        return s.family == socket.AF_UNIX
    finally:
        s.detach()


def stream_copy(conn, sql, shared_memory=False):
    """Run sql, a COPY ... TO STDOUT, on conn (usable(conn) must hold) and
    yield each CopyData payload as a fresh 64-byte aligned numpy uint8
    buffer. An ErrorResponse raises psycopg's error for its SQLSTATE once
    the server is ready for the next query, so the connection stays usable.
    Closing the generator before the end, or an interrupt
    (KeyboardInterrupt) mid-read, cancels the query and reads on to
    ReadyForQuery; when that fails the connection is shut down, and psycopg
    reports it broken when next used.

    shared_memory says that sql is a FORMAT tensor COPY with the
    SHARED_MEMORY option (on a Unix socket). A payload that refers to a
    frame in the shared area is then yielded as a fresh numpy uint8 array
    over the frame in the mapped area (64-byte aligned as well), which
    releases the frame to the server when it and every view of it (numpy
    views, torch.from_numpy and torch.frombuffer tensors) are gone, in
    whichever thread drops the last one. A consumer that keeps frames so
    holds the area's space, and the server sends later frames inline
    meanwhile. References read and not handed out (draining) are released
    at once. A reference that does not follow the format raises
    psycopg.OperationalError and shuts the connection down.

    The generator holds conn.lock until it ends, as psycopg's
    Cursor.stream does: other threads wait for the connection, and the loop
    reading the stream must not use it (psycopg would wait for the lock;
    another stream_copy raises ProgrammingError).

    NB: NoticeResponse, ParameterStatus and NotificationResponse messages
    that arrive during the COPY are dropped: libpq never sees them."""
    import psycopg

    me = threading.get_ident()
    if _streaming.get(id(conn)) == me:  # waiting for the lock would wait for ourselves
        raise psycopg.ProgrammingError("this thread is already streaming a COPY on the connection")
    conn.lock.acquire()
    _streaming[id(conn)] = me
    fd = sock = r = None
    try:
        if not usable(conn):  # changed while another thread held the connection
            raise psycopg.ProgrammingError("the connection is no longer idle in autocommit mode")
        q = sql.encode(conn.info.encoding)
        fd = conn.pgconn.socket
        was_blocking = os.get_blocking(fd)
        sock = socket.socket(fileno=os.dup(fd))
        r = _SharedReader(sock) if shared_memory else _Reader(sock)
        sock.settimeout(None)  # blocking (libpq keeps it non-blocking): restored below
        r.lost = True  # a Query sent in part leaves the server waiting for the rest
        sock.sendall(_HEADER.pack(b"Q", len(q) + 5) + q + b"\0")
        r.lost = False
        err = unexpected = None
        while True:
            typ = r.header()
            if typ == b"d" and err is None and unexpected is None:
                buf = r.data()
                yield buf
                buf = None
            elif typ == b"d":  # after an error
                r.skip_data()
            elif typ == b"Z":
                r.skip()
                if r.sw != r.sr:  # read ahead past the end: libpq's next bytes
                    r.ready, r.lost = False, True
                    if err is not None:
                        raise _error(err, conn.info.encoding)
                    raise psycopg.OperationalError("the server sent %d bytes after ReadyForQuery during COPY"
                                                   % (r.sw - r.sr))
                break
            elif typ == b"E":
                fields = r.body()
                if err is None:
                    err = fields
            elif typ == b"G":  # COPY FROM STDIN: refuse it, as psycopg's copy-out would fail
                r.skip()
                msg = b"COPY FROM STDIN is not a stream to read\0"
                sock.sendall(_HEADER.pack(b"f", len(msg) + 4) + msg)
                unexpected = unexpected or "COPY ... FROM STDIN"
            elif typ in b"HcCNSA":  # CopyOutResponse, CopyDone, CommandComplete,
                # NoticeResponse, ParameterStatus, NotificationResponse
                r.skip()
            else:  # RowDescription, DataRow, EmptyQueryResponse...: not a COPY TO
                r.skip()
                unexpected = unexpected or "a statement answered with message %r" % typ.decode("ascii", "replace")
        if unexpected is not None:
            raise psycopg.ProgrammingError("stream_copy needs a COPY ... TO STDOUT statement, got %s" % unexpected)
        if err is not None:
            raise _error(err, conn.info.encoding)
    finally:
        try:
            if r is not None and not r.ready:
                _abandon(conn, r)
        finally:
            if r is not None:
                r.close()
            if sock is not None:
                sock.close()
                if not conn.closed:
                    os.set_blocking(fd, was_blocking)
            del _streaming[id(conn)]
            conn.lock.release()


class _Reader:
    """Reads messages off the socket, keeping its place in the stream even
    when a read is interrupted (KeyboardInterrupt) so the stream can be
    drained: the bytes of stage from sr to sw are read and not yet taken
    (the next message's header, or more), left bytes of the current
    message's body are neither read nor staged. lost is set when the place
    is unknown; ready once ReadyForQuery is read whole. typ is the type
    of the message at hand, in_ref set while it may be a shared-memory
    reference not yet taken (a CopyData of ref_len bytes).

    A header's read takes up to ahead bytes after it too (0 here: the
    read stops at the header, so that nothing past the stream's
    ReadyForQuery is ever taken from libpq), which the body's reads then
    take first."""

    __slots__ = ("sock", "stage", "smv", "sr", "sw", "left", "lost", "ready", "scratch", "typ", "in_ref")

    ahead = 0
    ref_len = 0

    def __init__(self, sock):
        self.sock = sock
        self.stage = bytearray(_HEADER.size + self.ahead)
        self.smv = memoryview(self.stage)
        self.sr = self.sw = 0
        self.left = 0
        self.lost = False
        self.ready = False
        self.scratch = None
        self.typ = None
        self.in_ref = False

    def _recv(self, mv):
        k = self.sock.recv_into(mv)
        if not k:
            import psycopg
            self.lost = True
            raise psycopg.OperationalError("the server closed the connection during COPY")
        return k

    def header(self):
        """The next message's type; its body is then left to read."""
        if self.sw - self.sr < _HEADER.size:
            if self.sr:  # the part of a header staged goes to the front
                k = self.sw - self.sr
                self.stage[:k] = self.stage[self.sr:self.sw]
                self.sr, self.sw = 0, k
            while self.sw < _HEADER.size:
                self.sw += self._recv(self.smv[self.sw:])
        typ, length = _HEADER.unpack_from(self.stage, self.sr)
        if length < 4:
            import psycopg
            self.lost = True
            raise psycopg.OperationalError("invalid message length %d from the server" % length)
        self.left = length - 4
        self.sr += _HEADER.size
        self.typ = typ
        self.in_ref = self.ref_len > 0 and typ == b"d" and self.left == self.ref_len
        return typ

    def _take(self, k):
        """Take k bytes of the body at hand from the stage: the staged bytes,
        then the body's count, move on together."""
        self.sr += k
        self.left -= k

    def _into(self, mv):
        n = len(mv)
        k = min(self.left, self.sw - self.sr)
        if k:
            mv[n - self.left:n - self.left + k] = self.smv[self.sr:self.sr + k]
            self._take(k)
        while self.left:
            self.left -= self._recv(mv[n - self.left:])

    def body(self):
        b = bytearray(self.left)
        self._into(memoryview(b))
        return bytes(b)

    def body_aligned(self):
        buf = aligned_empty(self.left)
        self._into(memoryview(buf))
        return buf

    def skip(self):
        k = min(self.left, self.sw - self.sr)
        if k:
            self._take(k)
        if self.left and self.scratch is None:
            self.scratch = memoryview(bytearray(_SKIP_CHUNK))
        while self.left:
            self.left -= self._recv(self.scratch[:min(self.left, _SKIP_CHUNK)])
        if self.typ == b"Z":
            self.ready = True

    # data returns the CopyData payload at hand, skip_data skips it, finish
    # reads to the end of the message at hand (draining); close lets go of
    # what the reader holds.
    data = body_aligned
    skip_data = finish = skip

    def close(self):
        pass


def _protocol_error(r, message):
    """The error for a stream that does not follow the protocol: the
    connection is then shut down (r.lost)."""
    import psycopg
    r.lost = True
    return psycopg.OperationalError(message)


class _SharedReader(_Reader):
    """A _Reader for a SHARED_MEMORY stream: it reads with recvmsg, keeping
    the area's descriptor when it comes, and resolves references into
    views of the mapped area.

    fd is the area's descriptor until the area is mapped; area the
    mapping; refs the number of references taken (the seq the next one
    carries); ref the body of the reference at hand."""

    __slots__ = ("anc", "fd", "area", "refs", "ref", "refmv")

    # A header's read takes a reference's bytes with it: one recvmsg per
    # frame. The server sends nothing after ReadyForQuery unasked (but the
    # FATAL error of its shutdown, which ends the connection), so reading
    # ahead takes nothing from the next query's answer.
    ahead = _REF.size
    ref_len = _REF.size

    def __init__(self, sock):
        super().__init__(sock)
        self.anc = socket.CMSG_SPACE(_MAX_FDS * 4)
        self.fd = None
        self.area = None
        self.refs = 0
        self.ref = bytearray(_REF.size)
        self.refmv = memoryview(self.ref)

    def _recv(self, mv):
        k, anc, flags, _ = self.sock.recvmsg_into([mv], self.anc, _RECV_FLAGS)
        for level, typ, data in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                for fd in array.array("i", data[:len(data) - len(data) % 4]):
                    if self.fd is None and self.area is None:
                        self.fd = fd
                    else:  # the server passes one
                        os.close(fd)
        if flags & _MSG_CTRUNC:
            raise _protocol_error(self, "the server passed more file descriptors than expected during COPY")
        if not k:
            import psycopg
            self.lost = True
            raise psycopg.OperationalError("the server closed the connection during COPY")
        return k

    def _read_ref(self):
        """Read the reference at hand (its rest, after an interrupt) into
        ref; it is not taken (in_ref) until _resolve is done with it, or
        in_ref is cleared as it is not one."""
        self._into(self.refmv)

    def data(self):
        if self.left != _REF.size:
            buf = self.body_aligned()
            if buf[:4].tobytes() == REF_MAGIC:
                raise _protocol_error(self, "a shared-memory reference of %d bytes, want %d" % (len(buf), _REF.size))
            stats.inline += 1
            return buf
        self._read_ref()
        if self.ref[:4] != REF_MAGIC:  # a frame, which the frame's parser judges
            self.in_ref = False
            buf = aligned_empty(_REF.size)
            buf[:] = np.frombuffer(self.ref, dtype=np.uint8)
            stats.inline += 1
            return buf
        seq, offset, length = self._resolve()
        stats.shared += 1
        return self.area.frame(seq, offset, length)

    def skip_data(self):
        """Skip the CopyData at hand, releasing it when it is a reference."""
        if self.left != _REF.size:
            self.skip()
            return
        self._release_ref()

    def finish(self):
        if not self.in_ref:
            self.skip()
            return
        self._release_ref()  # a reference whose read or taking was interrupted

    def _release_ref(self):
        self._read_ref()
        if self.ref[:4] != REF_MAGIC:
            self.in_ref = False
            return
        seq = self._resolve()[0]  # maps the area at the first
        self.area.release(seq)

    def _resolve(self):
        """Check the reference in ref, mapping the area at the first, take
        it and return its seq, offset and length. Interrupted, it may run
        again on the same reference."""
        magic, version, _flags, seq, offset, length, size = _REF.unpack(self.ref)
        if version != SHARED_VERSION:
            raise _protocol_error(self, "shared-memory reference version %d, this client reads version %d"
                                  % (version, SHARED_VERSION))
        if seq != self.refs:
            raise _protocol_error(self, "shared-memory reference %d out of order, want %d" % (seq, self.refs))
        if self.area is None:
            if self.fd is None:
                raise _protocol_error(self, "a shared-memory reference before the area's file descriptor")
            fd, self.fd = self.fd, None
            try:
                self.area = _Area.open(self, fd, size)
            finally:
                os.close(fd)
        elif size != self.area.size:
            raise _protocol_error(self, "shared-memory reference to an area of %d bytes, the area has %d"
                                  % (size, self.area.size))
        if offset % ALIGN or offset < CONTROL_PAGE or offset > size or length > size - offset:
            raise _protocol_error(self, "shared-memory reference to bytes %d to %d, outside the %d-byte area's frames"
                                  % (offset, offset + length, size))
        self.refs += 1  # taken: no call between the two stores
        self.in_ref = False
        return seq, offset, length

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.area = None  # the views handed out keep it mapped


# The areas mapped in this process, for the fork handler below.
_areas = weakref.WeakSet()


class _Area:
    """A mapped shared area: frames are handed out as views (frame) and
    released (release) by storing seq + 1 in the control page.

    NB: the mapping stays while any frame's view or its release is
    pending (their finalizers hold the area); CPython's mmap keeps a
    duplicate of the descriptor as long. A forked child (a DataLoader
    worker, a multiprocessing.Process given a batch) gets a private copy
    of each area (_private_after_fork): the server goes on reusing the
    shared one as the parent releases frames. The child releases nothing:
    the frames it inherited are its parent's to release."""

    __slots__ = ("mm", "size", "addr", "released", "pid", "__weakref__")

    @classmethod
    def open(cls, r, fd, size):
        try:
            have = os.fstat(fd).st_size
        except OSError as e:
            raise _protocol_error(r, "the shared-memory area's descriptor: %s" % e) from e
        if size < CONTROL_PAGE or size != have:
            raise _protocol_error(r, "shared-memory reference to an area of %d bytes, the area has %d" % (size, have))
        try:
            mm = mmap.mmap(fd, size)  # MAP_SHARED, read and write
        except (OSError, ValueError) as e:
            raise _protocol_error(r, "mapping the shared-memory area: %s" % e) from e
        magic, version, _, page_size = _AREA.unpack_from(mm, 0)
        if magic != AREA_MAGIC or version != SHARED_VERSION or page_size != size:
            mm.close()
            raise _protocol_error(r, "the shared-memory area's control page has magic %r, version %d, size %d"
                                  % (magic, version, page_size))
        a = cls()
        a.mm, a.size, a.pid = mm, size, os.getpid()
        a.released = np.frombuffer(mm, dtype="<u8", count=RELEASED_SLOTS, offset=64)
        a.addr = a.released.ctypes.data - 64
        _areas.add(a)
        return a

    def make_private(self):
        """Replace the shared mapping with private memory holding what it
        holds now, at the same address, so the arrays over it keep their
        contents whatever the server writes into the area next."""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
        view = ctypes.c_char.from_buffer(self.mm)
        addr = ctypes.addressof(view)
        del view
        saved = self.mm[:]  # a copy
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x10  # MAP_FIXED
        got = libc.mmap(addr, self.size, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
        if got != addr:
            raise OSError(ctypes.get_errno(), "mmap over the shared area failed")
        ctypes.memmove(addr, saved, self.size)

    def frame(self, seq, offset, length):
        """A fresh array over the frame, released when it and every view of
        it are gone."""
        base = np.frombuffer(self.mm, dtype=np.uint8, count=length, offset=offset)
        weakref.finalize(base, self.release, seq).atexit = False
        return base

    def release(self, seq):
        if os.getpid() == self.pid:
            _fence()
            self.released[seq % RELEASED_SLOTS] = seq + 1  # one aligned 8-byte store


def area_of(arr):
    """(address, area) of the mapped shared area in which the numpy array
    arr lies, else None."""
    p = arr.ctypes.data
    for a in list(_areas):
        if a.addr <= p < a.addr + a.size and os.getpid() == a.pid:
            return a.addr, a
    return None


def _fence():
    """Order every read of a frame before the store that releases it, as
    Go's atomic store does: numpy's store is a plain one, which a weakly
    ordered CPU (ARM) may make visible to the server before earlier reads
    of the frame are done. A lock's release keeps the reads before it, and
    the next acquire of the same lock, which reads what the release wrote,
    keeps the store after it. The lock is this call's own: a finalizer run
    in the middle cannot wait for it."""
    lock = threading.Lock()
    lock.acquire()
    lock.release()
    lock.acquire()
    lock.release()


# Set by _before_fork while areas are mapped: the child tells the parent
# through it that it has made its copies.
_fork_pipe = None


def _before_fork():
    global _fork_pipe
    if len(_areas):
        _fork_pipe = os.pipe()


def _after_fork_in_parent():
    """Wait until the child has copied the areas: until then the parent
    must not release a frame, which the server could then write over."""
    global _fork_pipe
    p, _fork_pipe = _fork_pipe, None
    if p is not None:
        os.close(p[1])
        try:
            os.read(p[0], 1)  # a byte, or the end when the child died
        finally:
            os.close(p[0])


def _after_fork_in_child():
    """Make every area private (see _Area). An area that cannot be is
    unmapped instead, so that a read of the parent's frames fails loudly
    rather than seeing other frames' bytes."""
    global _fork_pipe
    p, _fork_pipe = _fork_pipe, None
    try:
        for a in list(_areas):
            try:
                a.make_private()
            except Exception:
                import ctypes
                libc = ctypes.CDLL(None)
                libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
                view = ctypes.c_char.from_buffer(a.mm)
                addr = ctypes.addressof(view)
                del view
                libc.munmap(addr, a.size)
    finally:
        if p is not None:
            os.close(p[0])
            os.write(p[1], b"x")
            os.close(p[1])


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


# The messages a COPY's answer may hold; anything else while draining means
# the place in the stream was lost.
_DRAIN_TYPES = frozenset(b"dHcCNSAEZGTDIn")


def _abandon(conn, r):
    """Bring a stream left before ReadyForQuery back to idle: cancel the
    query, finish the message at hand and read on to ReadyForQuery; when
    the place in the stream is lost, or that fails or takes longer than
    DRAIN_TIMEOUT, shut the connection down instead."""
    if not r.lost and not conn.closed:
        try:
            r.sock.settimeout(DRAIN_TIMEOUT)
            conn.cancel()
            deadline = time.monotonic() + DRAIN_TIMEOUT
            r.finish()
            while not r.ready and time.monotonic() < deadline:
                typ = r.header()
                if typ[0] not in _DRAIN_TYPES:
                    break
                if typ == b"d":
                    r.skip_data()
                else:
                    r.skip()
            if r.ready and r.sw == r.sr:  # else read ahead past the end: libpq's next bytes
                return
        except Exception:
            pass
    try:
        r.sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _error(fields, encoding):
    """The psycopg error for an ErrorResponse's fields, worded as libpq
    words it (message, then DETAIL and HINT lines)."""
    import psycopg
    from psycopg import errors

    info = {}
    for part in fields.split(b"\0"):
        if part:
            info[part[0]] = part[1:]
    code = (info.get(ord("C")) or b"").decode("ascii", "replace")
    try:
        cls = errors.lookup(code)
    except KeyError:
        cls = errors.get_base_exception(code) if code else psycopg.DatabaseError
    msg = (info.get(ord("M")) or b"").decode(encoding, "replace") or "no details available"
    for field, label in ((ord("D"), "DETAIL"), (ord("H"), "HINT")):
        if info.get(field):
            msg += "\n%s:  %s" % (label, info[field].decode(encoding, "replace"))
    return cls(msg, info=info, encoding=encoding)
