"""The streaming loader: an IterableDataset over the tensor stream."""

import hashlib
import os
import re
import secrets

import numpy as np

from . import rawcopy
from .frame import BYTES, FIXED, RAGGED, parse_aligned, parse_frame

try:
    import torch
    from torch.utils.data import IterableDataset as _Base
except ImportError:  # numpy only
    torch = None
    _Base = object

_IDENT = re.compile(r"^[a-z_][a-z0-9_$]*$")
_QUERY = re.compile(r"^\s*(\(|(select|with|values|table)\b)", re.IGNORECASE)


def quote_ident(name):
    """Quote an identifier unless it is a plain lower-case name."""
    if _IDENT.match(name):
        return name
    return '"' + name.replace('"', '""') + '"'


def is_query(source):
    return bool(_QUERY.match(source))


def copy_sql(source, batch_size=None, shuffle=False, seed=None, shuffle_buffer=None,
             shard=None, drop_last=False, start_batch=None, epoch=None, shared_memory=None,
             version=None):
    """The COPY statement that streams source (a table name or a query).
    shared_memory True or an area size in bytes asks for SHARED_MEMORY
    (read the statement with stream_frames(..., shared_memory=True))."""
    source = source.strip().rstrip(";").strip()
    target = "(%s)" % source if is_query(source) else source
    opts = ["FORMAT tensor"]
    if batch_size is not None:
        opts.append("BATCH_SIZE %d" % int(batch_size))
    if shuffle == "exact":
        opts.append("SHUFFLE 'exact'")
    elif shuffle:
        opts.append("SHUFFLE true")
    if seed is not None:
        opts.append("SEED %d" % int(seed))
    if shuffle_buffer is not None:
        opts.append("SHUFFLE_BUFFER %d" % int(shuffle_buffer))
    if shard is not None:
        rank, world = shard
        if not 0 <= rank < world:
            raise ValueError("shard %d/%d out of range" % (rank, world))
        if world > 1:
            opts.append("SHARD '%d/%d'" % (rank, world))
    if drop_last:
        opts.append("DROP_LAST true")
    if start_batch:
        opts.append("START_BATCH %d" % int(start_batch))
    if epoch:
        opts.append("EPOCH '%s'" % str(epoch).replace("'", "''"))
    if version is not None:
        opts.append("VERSION '%s'" % str(version).replace("'", "''"))
    if shared_memory is True:
        opts.append("SHARED_MEMORY true")
    elif shared_memory:
        opts.append("SHARED_MEMORY %d" % int(shared_memory))
    return "COPY %s TO STDOUT WITH (%s)" % (target, ", ".join(opts))


def _shared_epoch(epoch):
    """A one-element int64 tensor in shared memory holding epoch (-1 for
    None), or None without torch."""
    if torch is None:
        return None
    return torch.tensor([-1 if epoch is None else epoch], dtype=torch.int64).share_memory_()


def stream_frames(conn, sql, raw=None, shared_memory=False):
    """Run a COPY ... (FORMAT tensor) on a psycopg 3 connection and yield each
    frame parsed. A server error raises psycopg's error (its sqlstate set);
    the batches of that epoch already yielded should be dropped. Stopping
    early (closing the generator) cancels the query; the connection stays
    usable.

    On a plain, idle connection in autocommit mode the frames are received
    straight into their aligned buffers off the connection's socket
    (rawcopy); otherwise, or with raw=False, through psycopg's copy. raw=True
    insists on the former (ValueError when the connection does not allow it).
    shared_memory=True says that sql asks for SHARED_MEMORY (see copy_sql),
    which only the former reads (ValueError otherwise): frames then wrap
    the shared area in place, and each is released to the server once no
    array or tensor over it remains. While the generator runs, the
    connection is its alone."""
    if raw is None:
        raw = rawcopy.usable(conn)
    elif raw and not rawcopy.usable(conn):
        raise ValueError("stream_frames(raw=True) needs a plain (not SSL), idle connection in autocommit mode")
    if shared_memory and not raw:
        raise ValueError("stream_frames(shared_memory=True) needs the raw path: a plain (not SSL), "
                         "idle connection in autocommit mode")
    if raw:
        payloads = rawcopy.stream_copy(conn, sql, shared_memory=bool(shared_memory))
        try:
            for buf in payloads:
                frame, buf = parse_aligned(buf), None
                yield frame
                # Not held while the next frame is awaited: through shared
                # memory a frame goes back to the server once dropped.
                frame = None
        finally:
            payloads.close()
        return
    with conn.cursor() as cur:
        with cur.copy(sql) as cp:
            for payload in cp:
                yield parse_frame(payload)


class DataLoader(_Base):
    """Batches of a table or a query, streamed by the server.

    Builder methods return a new loader: .filter(cond), .columns([...]),
    .batch_size(n), .shuffle(flag=True, seed=None) (seed None: in the
    workers of a DataLoader(num_workers=N > 1), the epoch's base seed torch
    draws, shared by the workers and new each epoch; in one process 0, the
    server's default, so the order is the same each epoch: pass a new seed
    per epoch to reshuffle; flag may be "exact"), .shuffle_buffer(rows),
    .shard(rank, world_size), .drop_last(), .start_batch(n), .with_validity(),
    .snapshot(id), .shared_memory(flag_or_bytes=True), .to_numpy(),
    .to_torch(device="cpu", pin_memory=False). .set_epoch(epoch) sets the
    epoch in place, as DistributedSampler's does.

    Iterating yields one dict per batch: column name → torch.Tensor (after
    .to_torch()) or numpy array, shape [rows, *dims]. Ragged columns give a
    list of per-row arrays, bytes columns a list of str (text, json) or bytes
    (bytea), None for NULL. A NULL row of a fixed column is zeros; with
    .with_validity() the dict also holds "<name>.valid", a bool array.

    The loader is a torch IterableDataset: under torch's
    DataLoader(ds, batch_size=None, num_workers=N) each worker opens its own
    connection and reads shard global_rank*N + worker_id of world_size*N,
    so workers never repeat a row. global_rank and world_size come from
    .shard(...) or, when unset, from torch.distributed when it is
    initialized.

    The statements of one epoch's shards read one snapshot of the database
    (the server's EPOCH option), so they partition the same rows even when
    the table is written to meanwhile: the workers of one DataLoader agree
    on it by themselves; ranks agree once every rank calls .set_epoch(e)
    at each epoch's start (with the same seed, or none).

    Over a Unix socket (a conninfo whose host is a directory), each
    statement asks for SHARED_MEMORY (docs/tensor-stream.md): the server
    places the frames in a memory area it shares with the connection, one
    area per worker's connection, and the batches' arrays and CPU tensors
    wrap that memory in place (no copy); a frame goes back to the server
    once nothing refers to it. Keeping batches is still safe: while kept
    ones fill the area, the server sends frames through the socket
    instead. .shared_memory(False) turns it off; .shared_memory(n) sets
    the area's size to n bytes (1 MiB to 4 GiB; True: the server's 64 MiB).
    """

    def __init__(self, db, source):
        # NB: the connection string, not the connection, so the loader
        # pickles into spawned DataLoader workers.
        self._conninfo = getattr(db, "conninfo", None)
        self._connect_kwargs = getattr(db, "connect_kwargs", {})
        self._source = source
        self._filter = []
        self._columns = None
        self._batch_size = None
        self._shuffle = False
        self._seed = None
        self._shuffle_buffer = None
        self._shard = None
        self._drop_last = False
        self._start_batch = None
        self._validity = False
        self._snapshot = None
        self._version = None
        # source is the Source of the last stream this loader read (its
        # first frame's): the version, commit id and branch it read.
        self.source = None
        self._shared_memory = True
        self._mode = "numpy"
        self._device = None
        self._pin = False
        self._epoch = None
        # _epoch_shared holds the epoch (-1: none) in shared memory, so that
        # persistent DataLoader workers, forked or spawned before a later
        # set_epoch, read the main process's current epoch.
        self._epoch_shared = _shared_epoch(None)
        # _nonce tells this loader's epochs from other loaders' (and runs')
        # on the server; _iters counts this process's epochs.
        self._nonce = secrets.token_hex(8)
        self._iters = 0

    def _with(self, **kw):
        c = object.__new__(type(self))  # not copy.copy: __getstate__ is for workers
        c.__dict__.update(self.__dict__)
        c._filter = list(self._filter)
        c._epoch = self._current_epoch()
        c._epoch_shared = _shared_epoch(c._epoch)
        for k, v in kw.items():
            setattr(c, "_" + k, v)
        return c

    def filter(self, condition):
        return self._with(filter=self._filter + [condition])

    def columns(self, names):
        return self._with(columns=list(names))

    def batch_size(self, n):
        if int(n) < 1:
            raise ValueError("batch size must be positive")
        return self._with(batch_size=int(n))

    def shuffle(self, flag=True, seed=None):
        return self._with(shuffle=flag, seed=seed)

    def shuffle_buffer(self, rows):
        return self._with(shuffle_buffer=int(rows))

    def shard(self, rank, world_size):
        if not 0 <= rank < world_size:
            raise ValueError("shard %d/%d out of range" % (rank, world_size))
        return self._with(shard=(int(rank), int(world_size)))

    def drop_last(self, flag=True):
        return self._with(drop_last=bool(flag))

    def start_batch(self, n):
        return self._with(start_batch=int(n))

    def with_validity(self, flag=True):
        return self._with(validity=bool(flag))

    def snapshot(self, snapshot_id):
        """Read the table as the snapshot exported as snapshot_id sees it
        (Database.export_snapshot(); SET TRANSACTION SNAPSHOT), while its
        exporter's transaction is open."""
        return self._with(snapshot=str(snapshot_id))

    def version(self, ref):
        """Read the version ref names: a commit id, a tag, a branch, a
        version number or a time (VERSION in docs/tensor-stream.md)."""
        c = self._with(version=str(ref))
        c.source = None
        return c

    @property
    def commit_id(self):
        """The id of the commit the loader's last stream read (known from
        its first batch on): log it, and .version(commit_id) reads the
        same rows again, whatever the table became since. None before the
        first batch, and for a query of several tables."""
        return self.source.commit if self.source is not None and self.source.commit else None

    def shared_memory(self, flag_or_bytes=True):
        """Whether to ask for SHARED_MEMORY where the connection allows it
        (a Unix socket): True (the default), False (or 0), or the area's
        size in bytes (1 MiB to 4 GiB)."""
        v = flag_or_bytes
        if isinstance(v, (bool, np.bool_)) or v == 0:
            v = bool(v)
        else:
            v = int(v)
            if not 1 << 20 <= v <= 4 << 30:
                raise ValueError("shared memory area of %d bytes out of range (1 MiB to 4 GiB)" % v)
        return self._with(shared_memory=v)

    def set_epoch(self, epoch):
        """Set the epoch (an integer ≥ 0), in place, as
        DistributedSampler.set_epoch: call it on every rank at each epoch's
        start (persistent DataLoader workers see it too). With a seed, the
        shuffle's seed becomes seed + epoch; without one, ranks use the
        epoch, one process the epoch, and the workers of one rank torch's
        base seed (new each epoch). The shards of all ranks and workers of
        the epoch read one snapshot of the database."""
        epoch = int(epoch)
        if epoch < 0:
            raise ValueError("epoch %d is negative" % epoch)
        self._epoch = epoch
        if self._epoch_shared is not None:
            self._epoch_shared[0] = epoch
        return self

    def _current_epoch(self):
        """The epoch set_epoch last set, in whichever process it was called
        (persistent DataLoader workers share it with the main process), or
        None."""
        if self._epoch_shared is not None:
            e = int(self._epoch_shared[0])
            return None if e < 0 else e
        return self._epoch

    def __getstate__(self):
        # A DataLoader worker started by spawn or forkserver gets the loader
        # pickled, and torch.distributed is not initialized in it: the
        # ranks are read here, in the rank's process.
        state = dict(self.__dict__)
        if state["_shard"] is None:
            rank, world = self._rank_world()
            if world > 1:
                state["_shard"] = (rank, world)
        return state

    def to_numpy(self):
        return self._with(mode="numpy", device=None, pin=False)

    def to_torch(self, device="cpu", pin_memory=False):
        """Yield torch tensors on device. Copies to a CUDA device are
        non-blocking; pin_memory pins the host tensors first (ignored without
        CUDA, as torch's DataLoader does). A CUDA device on a machine
        without CUDA raises RuntimeError here rather than mid-epoch."""
        if torch is None:
            raise RuntimeError("deeplaked: to_torch needs PyTorch (import torch failed)")
        dev = torch.device(device)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("deeplaked: device %r requested but CUDA is not available; use device='cpu'" % device)
        return self._with(mode="torch", device=dev, pin=bool(pin_memory))

    def query(self):
        """The table name or SELECT the loader streams."""
        src = self._source.strip().rstrip(";")
        if not self._filter and self._columns is None:
            return src
        cols = "*" if self._columns is None else ", ".join(quote_ident(c) for c in self._columns)
        frm = "(%s) AS q" % src if is_query(src) else src
        sql = "SELECT %s FROM %s" % (cols, frm)
        if self._filter:
            sql += " WHERE " + " AND ".join("(%s)" % f for f in self._filter)
        return sql

    def _rank_world(self):
        """This process's rank and the number of ranks: .shard(...), else
        torch.distributed's when it is initialized, else (0, 1)."""
        if self._shard is not None:
            return self._shard
        if torch is not None:
            dist = torch.distributed
            if dist.is_available() and dist.is_initialized():
                return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def _worker(self):
        """torch's WorkerInfo in a DataLoader worker of several, else None."""
        info = torch.utils.data.get_worker_info() if torch is not None else None
        return info if info is not None and info.num_workers > 1 else None

    def _shard_for_worker(self):
        rank, world = self._rank_world()
        info = self._worker()
        if info is not None:
            rank, world = rank * info.num_workers + info.id, world * info.num_workers
        return rank, world

    def _epoch_seed(self):
        """The seed of this process's statement: the one given, plus the
        epoch after .set_epoch(); else, with several ranks, the epoch (0
        without .set_epoch()), which every rank knows; else, in a
        DataLoader worker of several, the base seed torch draws for the
        epoch (the same in every worker of one rank), plus the worker's
        count of epochs (persistent workers keep their base seed); else
        the epoch, or None. The workers' and ranks' shards so agree on one
        order (random() in the query draws from SEED as well)."""
        epoch = self._current_epoch() or 0
        if self._seed is not None:
            return (self._seed + epoch) % (1 << 64)
        if self._rank_world()[1] > 1:
            return epoch
        info = self._worker()
        if info is not None:
            return (info.seed - info.id + max(self._iters - 1, 0)) % (1 << 63)
        return self._current_epoch()

    def _epoch_key(self, seed, shard):
        """The EPOCH key of this process's statement, shared by every shard
        of the epoch, or None when the stream is not sharded (or reads an
        exported snapshot). Ranks agree on a key only after .set_epoch():
        a digest of what all ranks' loaders share (the query, options,
        seed, world size and epoch, and torchrun's run id and rendezvous
        address from the environment). The workers of one rank use the
        loader's nonce, the base seed torch drew for them and their count
        of epochs (and the epoch, if set)."""
        if self._snapshot is not None or shard[1] < 2:
            return None
        epoch = self._current_epoch()
        if self._rank_world()[1] > 1:
            if epoch is None:
                return None
            # What the ranks share of their launch tells runs apart:
            # torchrun's run id (a new one per --standalone run), the
            # rendezvous address.
            env = tuple(os.environ.get(k, "") for k in ("TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT"))
            h = hashlib.sha256(repr((self.query(), self._batch_size, self._shuffle, seed,
                                     self._rank_world()[1], epoch, env)).encode())
            return "deeplaked:" + h.hexdigest()[:32]
        info = self._worker()
        if info is None:
            return None
        return "deeplaked:%s:%d:%d:%s" % (self._nonce, info.seed - info.id, self._iters, epoch)

    def sql(self, shared_memory=None):
        """The COPY statement this process (or DataLoader worker) runs;
        shared_memory as copy_sql's (frames() sets it by the connection)."""
        seed, shard = self._epoch_seed(), self._shard_for_worker()
        return copy_sql(self.query(), batch_size=self._batch_size, shuffle=self._shuffle,
                        seed=seed, shuffle_buffer=self._shuffle_buffer,
                        shard=shard, drop_last=self._drop_last,
                        start_batch=self._start_batch, epoch=self._epoch_key(seed, shard),
                        shared_memory=shared_memory, version=self._version)

    def frames(self):
        """Yield the parsed frames (deeplaked.frame.Frame) of one epoch."""
        import psycopg
        conn = psycopg.connect(self._conninfo, autocommit=True, **self._connect_kwargs)
        try:
            if self._snapshot is not None:
                from psycopg import sql as pgsql
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                conn.execute(pgsql.SQL("SET TRANSACTION SNAPSHOT {}").format(pgsql.Literal(self._snapshot)))
            shm = self._shared_memory if rawcopy.usable(conn) and rawcopy.unix_socket(conn) else False
            for frame in stream_frames(conn, self.sql(shared_memory=shm), shared_memory=bool(shm)):
                if frame.source is not None:
                    self.source = frame.source
                yield frame
        finally:
            conn.close()  # ends the snapshot's transaction, if any

    def __iter__(self):
        self._iters += 1
        placer = None
        if self._mode == "torch" and self._device is not None and self._device.type == "cuda":
            if getattr(torch.cuda, "_is_in_bad_fork", lambda: False)():
                raise RuntimeError(
                    "deeplaked: to_torch(device=%r) in a process forked after CUDA started (a DataLoader "
                    "worker?): CUDA cannot be used there. Use to_torch(pin_memory=True) on the CPU with "
                    "DataLoader(pin_memory=True) and move each batch in the loop, or "
                    "DataLoader(multiprocessing_context='spawn')" % str(self._device))
            from .device import Placer
            placer = Placer(self._device, self._pin)
        try:
            for frame in self.frames():
                out, frame = self._batch(frame, placer), None
                yield out
                out = None  # not held while the next frame is awaited (see stream_frames)
                if placer is not None:
                    placer.retire()  # the frames whose copies are done go back before the wait
        finally:
            if placer is not None:
                placer.close()

    def _batch(self, frame, placer=None):
        """The dict of one frame's columns; placer (device.Placer) puts
        them on a CUDA device, mostly in one copy of the frame."""
        out = {}
        dev = held = None
        try:
            if placer is not None:
                if placer.whole(frame):
                    dev, held = placer.frame(frame)
                else:
                    held = placer.held(frame)
            for name, col in frame.columns.items():
                t = None if dev is None or col.kind != FIXED else placer.column(dev, frame, col)
                out[name] = t if t is not None else self._convert(col, col.to_numpy())
                if self._validity:
                    out[name + ".valid"] = self._convert_fixed(col.valid(), None)
        finally:
            if placer is not None:
                placer.finish(held)  # also after a failure: copies may be under way
        return out

    def _convert(self, col, value):
        if self._mode != "torch":
            return value
        if col.kind == FIXED:
            return self._convert_fixed(value, col.dtype_code)
        if col.kind == RAGGED:
            return [self._convert_fixed(v, col.dtype_code) for v in value]
        return value  # bytes columns stay str / bytes

    def _convert_fixed(self, arr, code):
        if self._mode != "torch":
            return arr
        if code == 8:  # bfloat16 arrives as raw bits
            t = torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
        else:
            t = torch.from_numpy(arr)
        if self._pin and torch.cuda.is_available():
            t = t.pin_memory()
        if self._device is not None and self._device.type != "cpu":
            t = t.to(self._device, non_blocking=True)
        return t
