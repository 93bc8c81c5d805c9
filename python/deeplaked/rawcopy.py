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
"""

import os
import socket
import struct
import threading
import time

from .frame import aligned_empty

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


def stream_copy(conn, sql):
    """Run sql, a COPY ... TO STDOUT, on conn (usable(conn) must hold) and
    yield each CopyData payload as a fresh 64-byte aligned numpy uint8
    buffer. An ErrorResponse raises psycopg's error for its SQLSTATE once
    the server is ready for the next query, so the connection stays usable.
    Closing the generator before the end, or an interrupt
    (KeyboardInterrupt) mid-read, cancels the query and reads on to
    ReadyForQuery; when that fails the connection is shut down, and psycopg
    reports it broken when next used.

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
        r = _Reader(sock)
        sock.settimeout(None)  # blocking (libpq keeps it non-blocking): restored below
        r.lost = True  # a Query sent in part leaves the server waiting for the rest
        sock.sendall(_HEADER.pack(b"Q", len(q) + 5) + q + b"\0")
        r.lost = False
        err = unexpected = None
        while True:
            typ = r.header()
            if typ == b"d" and err is None and unexpected is None:
                buf = r.body_aligned()
                yield buf
                buf = None
            elif typ == b"Z":
                r.skip()
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
            elif typ in b"dHcCNSA":  # CopyData after an error, CopyOutResponse, CopyDone,
                # CommandComplete, NoticeResponse, ParameterStatus, NotificationResponse
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
            if sock is not None:
                sock.close()
                if not conn.closed:
                    os.set_blocking(fd, was_blocking)
            del _streaming[id(conn)]
            conn.lock.release()


class _Reader:
    """Reads messages off the socket, keeping its place in the stream even
    when a read is interrupted (KeyboardInterrupt) so the stream can be
    drained: hgot header bytes of the next message are read, left bytes of
    the current message's body are not. lost is set when the place is
    unknown; ready with ReadyForQuery."""

    __slots__ = ("sock", "hdr", "hmv", "hgot", "left", "lost", "ready", "scratch")

    def __init__(self, sock):
        self.sock = sock
        self.hdr = bytearray(_HEADER.size)
        self.hmv = memoryview(self.hdr)
        self.hgot = 0
        self.left = 0
        self.lost = False
        self.ready = False
        self.scratch = None

    def _recv(self, mv):
        k = self.sock.recv_into(mv)
        if not k:
            import psycopg
            self.lost = True
            raise psycopg.OperationalError("the server closed the connection during COPY")
        return k

    def header(self):
        """The next message's type; its body is then left to read."""
        while self.hgot < _HEADER.size:
            self.hgot += self._recv(self.hmv[self.hgot:])
        typ, length = _HEADER.unpack(self.hdr)
        if length < 4:
            import psycopg
            self.lost = True
            raise psycopg.OperationalError("invalid message length %d from the server" % length)
        self.left, self.hgot = length - 4, 0
        if typ == b"Z":
            self.ready = True
        return typ

    def _into(self, mv):
        n = len(mv)
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
        if self.left and self.scratch is None:
            self.scratch = memoryview(bytearray(_SKIP_CHUNK))
        while self.left:
            self.left -= self._recv(self.scratch[:min(self.left, _SKIP_CHUNK)])


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
            r.skip()
            while not r.ready and time.monotonic() < deadline:
                if r.header()[0] not in _DRAIN_TYPES:
                    break
                r.skip()
            if r.ready:
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
