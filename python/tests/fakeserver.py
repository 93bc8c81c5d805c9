"""A scripted server for the raw COPY path's tests: the test's end of a
Unix socket pair stands for libpq's, and a thread plays the server."""

import contextlib
import signal
import socket
import struct
import threading
import time


def msg(typ, body=b""):
    return typ + struct.pack("!I", len(body) + 4) + body


@contextlib.contextmanager
def interrupt_after(seconds):
    """Raise KeyboardInterrupt in the main thread after seconds, as Ctrl-C
    would, unless the block ends first."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def error_fields(code, message, detail=None, hint=None):
    b = b"SERROR\0VERROR\0C" + code.encode() + b"\0M" + message.encode() + b"\0"
    if detail:
        b += b"D" + detail.encode() + b"\0"
    if hint:
        b += b"H" + hint.encode() + b"\0"
    return b + b"\0"


class FakeConn:
    """What stream_copy uses of a psycopg connection."""

    class _PGconn:
        ssl_in_use = False

        def __init__(self, fd):
            self.socket = fd

    class _Info:
        encoding = "utf-8"
        transaction_status = 0

    def __init__(self, sock):
        self.sock = sock
        self.pgconn = self._PGconn(sock.fileno())
        self.info = self._Info()
        self.lock = threading.Lock()
        self.closed = False
        self.autocommit = True
        self.cancels = 0

    def cancel(self):
        self.cancels += 1


class Script:
    """Plays the server: reads the Query, then writes out in pieces of
    `chunk` bytes (to exercise partial reads). fds, when given, is
    (position, [descriptors]): the piece that holds byte `position` of out
    carries the descriptors as SCM_RIGHTS."""

    def __init__(self, out, chunk=7, hang_up=False, pause_at=None, fds=None):
        self.client, self.server = socket.socketpair(socket.AF_UNIX)
        self.hang_up, self.pause_at, self.fds = hang_up, pause_at, fds
        self.client.setblocking(False)  # as libpq leaves it
        self.conn = FakeConn(self.client)
        self.out, self.chunk = out, chunk
        self.query = None
        self.got = b""
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _read_exact(self, n):
        b = b""
        while len(b) < n:
            part = self.server.recv(n - len(b))
            if not part:
                raise EOFError
            b += part
        return b

    def _run(self):
        try:
            typ, n = struct.unpack("!cI", self._read_exact(5))
            self.query = (typ, self._read_exact(n - 4))
            for i in range(0, len(self.out), self.chunk):
                if self.pause_at is not None and i <= self.pause_at < i + self.chunk:
                    time.sleep(1)
                piece = self.out[i:i + self.chunk]
                if self.fds is not None and i <= self.fds[0] < i + self.chunk:
                    sent = socket.send_fds(self.server, [piece], self.fds[1])
                    self.server.sendall(piece[sent:])
                else:
                    self.server.sendall(piece)
            if self.hang_up:
                self.server.shutdown(socket.SHUT_RDWR)
                return
            self.server.settimeout(0.5)
            while True:  # whatever the client sends afterwards (CopyFail)
                part = self.server.recv(4096)
                if not part:
                    break
                self.got += part
        except (OSError, EOFError):
            pass

    def close(self):
        self.server.close()
        self.thread.join(5)
        self.client.close()
