"""Ranks on two servers of one storage location: versitygw and two
deeplaked processes on one S3 prefix (--durability bucket, the second
--attach), each rank reading its shard from its own server.

DEEPLAKED_BIN names the deeplaked binary and DEEPLAKED_VERSITYGW the
versitygw binary (the Go test test/pyclient builds and finds them);
without DEEPLAKED_BIN the tests are skipped."""

import os
import socket
import subprocess
import threading
import time

import pytest

import deeplaked

BIN = os.environ.get("DEEPLAKED_BIN")
GW = os.environ.get("DEEPLAKED_VERSITYGW") or os.path.expanduser("~/.cache/deeplaked/bin/versitygw")
pytestmark = pytest.mark.skipif(not BIN, reason="DEEPLAKED_BIN not set")

KEY, SECRET = "deeplaked-test", "deeplaked-test-secret"


def free_addr():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "127.0.0.1:%d" % s.getsockname()[1]


class Proc:
    """A child process whose output is kept, for the test's error
    messages, and read for a line saying it is ready."""

    def __init__(self, args, env, ready=None):
        self.lines = []
        self.ready = threading.Event()
        self.p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self._want = ready
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line)
            if self._want is not None and self._want in line:
                self.ready.set()

    def wait_ready(self, what, timeout=60):
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.05):
            if self.p.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("%s did not start:\n%s" % (what, "".join(self.lines)))

    def stop(self):
        self.p.kill()
        self.p.wait()


@pytest.fixture
def servers(tmp_path):
    """Two servers on one S3 prefix; each refreshes only when asked
    (deeplake_refresh()), so the test decides when they see each other's
    commits."""
    env = dict(os.environ, ROOT_ACCESS_KEY=KEY, ROOT_SECRET_KEY=SECRET, AWS_ACCESS_KEY_ID=KEY,
               AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1", AWS_PROFILE="",
               AWS_CONFIG_FILE=str(tmp_path / "no-aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-aws-credentials"))
    procs = []
    try:
        gw_addr = free_addr()
        (tmp_path / "s3").mkdir()
        gw = Proc([GW, "--port", gw_addr, "--quiet", "posix", str(tmp_path / "s3")], env)
        procs.append(gw)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(tuple(gw_addr.rsplit(":", 1)), timeout=1).close()
                break
            except OSError:
                if gw.p.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("versitygw did not start:\n" + "".join(gw.lines))
                time.sleep(0.02)
        dsns = []
        for i in range(2):
            addr = free_addr()
            args = [BIN, "--listen", addr, "--data-dir", str(tmp_path / ("data%d" % i)),
                    "--storage", "s3://shards/prefix", "--s3-endpoint", "http://" + gw_addr,
                    "--durability", "bucket", "--refresh-interval", "1h"]
            if i > 0:
                args.append("--attach")
            p = Proc(args, env, ready="listening")
            procs.append(p)
            p.wait_ready("server %d" % (i + 1))
            dsns.append("postgres://postgres@%s/postgres?sslmode=disable" % addr)
        dbs = [deeplaked.connect(d) for d in dsns]
        yield dbs
        for db in dbs:
            db.close()
    finally:
        for p in reversed(procs):
            p.stop()


def ids(db, rank, world=2, seed=11):
    loader = db.dataloader("shard_t").batch_size(256).shuffle(True, seed=seed).shard(rank, world)
    return [int(i) for b in loader for i in b["id"]]


def refresh(dbs):
    """Both servers apply the log to its end; returns their positions."""
    return [db.execute("SELECT deeplake_refresh()")[0][0] for db in dbs]


def test_ranks_on_two_servers(servers):
    s1, s2 = servers
    # Loaded through server 1 in several row groups: two fragments (each
    # VACUUM flushes the buffered rows), rows still buffered, and
    # deleted rows.
    s1.execute("CREATE TABLE shard_t (id int, v float4[2])")
    s1.execute("INSERT INTO shard_t SELECT g, ARRAY[g, -g] FROM generate_series(1, 3000) g")
    s1.execute("VACUUM shard_t")
    s1.execute("INSERT INTO shard_t SELECT g, ARRAY[g, -g] FROM generate_series(3001, 7000) g")
    s1.execute("VACUUM shard_t")
    s1.execute("INSERT INTO shard_t SELECT g, ARRAY[g, -g] FROM generate_series(7001, 9000) g")
    s1.execute("DELETE FROM shard_t WHERE id % 10 = 0")
    want = {i for i in range(1, 9001) if i % 10}

    # The split follows the table's row groups as the statement's
    # snapshot sees them (docs/tensor-stream.md): the two servers must
    # be at one position of the log, so that they see one layout.
    seq = refresh(servers)
    assert seq[0] == seq[1], seq
    r0, r1 = ids(s1, 0), ids(s2, 1)
    assert not set(r0) & set(r1)
    assert len(r0) + len(r1) == len(want) and set(r0) | set(r1) == want
    # Each server gives the shard, in the same order, that the other
    # gives.
    assert r0 == ids(s2, 0) and r1 == ids(s1, 1)

    # VACUUM (on server 1) moves the buffered rows into a fragment and
    # compacts: a new layout, the same rows. Once both servers see it,
    # the ranks partition the rows again, and, the table vacuumed, hold
    # as many rows to one row.
    s1.execute("VACUUM shard_t")
    seq = refresh(servers)
    assert seq[0] == seq[1], seq
    for world in (2, 3):
        parts = [ids(servers[r % 2], r, world) for r in range(world)]
        flat = [i for p in parts for i in p]
        assert len(flat) == len(want) and set(flat) == want, [len(p) for p in parts]
        assert max(map(len, parts)) - min(map(len, parts)) <= 1, [len(p) for p in parts]

    # Rows written through server 2, refreshed on server 1: the same.
    s2.execute("INSERT INTO shard_t SELECT g, ARRAY[g, -g] FROM generate_series(9001, 9500) g")
    seq = refresh(servers)
    assert seq[0] == seq[1], seq
    want |= set(range(9001, 9501))
    r0, r1 = ids(s1, 0, seed=5), ids(s2, 1, seed=5)
    assert not set(r0) & set(r1) and set(r0) | set(r1) == want
