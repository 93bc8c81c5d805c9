"""Map-style access to a table: Table and its TableDataset."""

import collections
import os

from .frame import FIXED, RAGGED
from .loader import copy_sql, quote_ident, stream_frames

try:
    import torch
    from torch.utils.data import Dataset as _Base
except ImportError:
    torch = None
    _Base = object


# ROWID is the system column of a row's id: every table has it (unless a
# column takes its name), * leaves it out, and `_rowid IN (...)` reads the
# rows by id.
ROWID = "_rowid"


class Table:
    """A table of a Database (db.open_table(name)), with version control in
    Deep Lake's words (docs/versioning.md): commit, checkout, log, diff,
    merge, tag, reset, branches, tags. Each is a thin call of the SQL
    functions. The table is read at its ref: main (the table itself)
    until checkout."""

    def __init__(self, db, name):
        self.db = db
        self.table = name
        # ref is what checkout named: a branch (written as well as read),
        # or a commit, tag, version or time (read-only); None for the
        # session's branch of the table.
        self.ref = None

    @property
    def name(self):
        """The name queries read the table by: "table@ref" after a
        checkout."""
        if self.ref is None:
            return self.table
        return '"%s@%s"' % (self.table.strip('"').replace('"', '""'), self.ref.replace('"', '""'))

    def __len__(self):
        return self.db.execute("SELECT count(*) FROM %s" % self.name)[0][0]

    def _one(self, sql, *args):
        return self.db.execute(sql, (self.table.strip('"'),) + args)[0][0]

    def _rows(self, sql, *args):
        rows = self.db.execute(sql, (self.table.strip('"'),) + args)
        return rows or []

    @property
    def branch(self):
        """The branch a checkout named, else the session's of the table."""
        if self.ref is not None and self.ref in self.branches:
            return self.ref
        if self.ref is None:
            return self._session_branch() or "main"
        return None

    def _session_branch(self):
        setting = self.db.execute("SELECT current_setting('deeplake.branch')")[0][0]
        bare = None
        for e in (x.strip() for x in setting.split(",")):
            t, sep, b = e.partition(":")
            if sep and t == self.table.strip('"'):
                return b
            if not sep:
                bare = e
        return bare

    def _here(self):
        """The ref functions write to: the checked-out branch, or the
        session's (None)."""
        return self.ref

    def commit(self, message=""):
        """Name the version the table is at (of its branch) with a commit;
        returns the commit id."""
        return self._one("SELECT deeplake_commit(%s, %s)" if self.ref is None else
                         "SELECT deeplake_commit(%%s || '@' || %s, %%s)" % _lit(self.ref), message)

    def checkout(self, ref, create=False):
        """Read (and, for a branch, write) the table at ref from now on:
        a branch, a commit id, a tag, a version number or a time. With
        create, make branch ref first, from the version read now. A branch
        checked out is also the session's branch of the table (SET
        deeplake.branch), so that SQL on db writes it. Returns self."""
        if create:
            if self.ref is None:
                self._one("SELECT deeplake_branch(%s, %s)", ref)
            else:
                self._one("SELECT deeplake_branch(%s, %s, %s)", ref, self.ref)
        self.db.execute("SELECT 1 FROM deeplake_at(%s, %s) LIMIT 0" % (_lit(self.table.strip('"')), _lit(ref)))
        self.ref = None if ref == "main" else ref
        if ref in self.branches:
            self._set_session_branch(ref)
        return self

    def _set_session_branch(self, ref):
        t = self.table.strip('"')
        setting = self.db.execute("SELECT current_setting('deeplake.branch')")[0][0]
        entries = [e.strip() for e in setting.split(",") if e.strip() and e.strip().partition(":")[0] != t
                   and e.strip() != "main"]
        if ref != "main":
            entries.append("%s:%s" % (t, ref))
        self.db.execute("SELECT set_config('deeplake.branch', %s, false)", (", ".join(entries) or "main",))

    def log(self, ref=None):
        """The commits the table's ref (or ref) reaches, newest first, as
        dicts: id, parent, merged, branch, message, author, time, added,
        deleted."""
        # NB: the arguments of deeplake_log, deeplake_diff and deeplake_refs
        # are literals: they decide the function's columns when it is bound.
        ref = ref if ref is not None else self.ref
        cols = ("id", "parent", "merged", "branch", "message", "author", "time", "added", "deleted")
        args = [_lit(self.table.strip('"'))] + ([] if ref is None else [_lit(ref)])
        rows = self.db.execute("SELECT %s FROM deeplake_log(%s)" % (", ".join(cols), ", ".join(args)))
        return [dict(zip(cols, r)) for r in rows or []]

    def diff(self, a, b=None):
        """The rows that differ from ref a to ref b (the table's ref when
        None), as (change, row dict) pairs: change is 'added', 'deleted'
        or 'updated'."""
        b = b if b is not None else (self.ref or self.branch or "main")
        with self.db.conn.cursor() as cur:
            cur.execute("SELECT * FROM deeplake_diff(%s, %s, %s)" % (_lit(self.table.strip('"')), _lit(a), _lit(b)))
            names = [d.name for d in cur.description]
            return [(r[0], dict(zip(names[1:], r[1:]))) for r in cur.fetchall()]

    def merge(self, ref, strategy=None):
        """Merge ref's changes into the checked-out branch (the session's
        when none is): a merge commit, whose id it returns. A conflict
        raises (SQLSTATE 40001) unless strategy is 'ours' or 'theirs'."""
        return self._one("SELECT deeplake_merge(%s, %s, %s, %s)", ref, self.ref, strategy)

    def reset(self, ref):
        """Move the checked-out branch back to ref, as a new commit
        (history is kept); returns its id."""
        if self.ref is None:
            return self._one("SELECT deeplake_reset(%s, %s)", ref)
        return self._one("SELECT deeplake_reset(%%s || '@' || %s, %%s)" % _lit(self.ref), ref)

    def tag(self, name, ref=None):
        """Tag ref (the version the table is at when None) as name."""
        ref = ref if ref is not None else self.ref
        if ref is None:
            return self._one("SELECT deeplake_tag(%s, %s)", name)
        return self._one("SELECT deeplake_tag(%s, %s, %s)", name, ref)

    def _refs(self, kind):
        rows = self.db.execute("SELECT name FROM deeplake_refs(%s) WHERE kind = %%s ORDER BY name" % _lit(self.table.strip('"')), (kind,))
        return [r[0] for r in rows or []]

    @property
    def branches(self):
        """The table's branches, by name (main among them)."""
        return self._refs("branch")

    @property
    def tags(self):
        """The table's tags, by name."""
        return self._refs("tag")

    def dataloader(self):
        """A loader streaming the table at its ref."""
        from .loader import DataLoader
        return DataLoader(self.db, self.name)

    def primary_key(self):
        """The primary key's columns, in order, or [] when the table has none
        (or the catalog cannot say)."""
        schema, _, table = self.table.rpartition(".")
        rows = self.db.execute(
            "SELECT a.attname FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indisprimary AND c.relname = %s AND n.nspname = %s ORDER BY a.attnum",
            (table.strip('"'), (schema or "public").strip('"')))
        return [r[0] for r in rows or []]

    def pytorch(self, columns=None, order_by=None, block_size=256, cache_blocks=4, transform=None, snapshot=None):
        """A map-style dataset over the table (see TableDataset). Without
        order_by, rows are ordered by the primary key, or by the system
        column _rowid in a table without one. With snapshot (an identifier
        from Database.export_snapshot()), every process reads the table as
        that snapshot sees it; with snapshot=True, as it is now: the
        dataset's connection in this process exports its snapshot and holds
        it while the dataset lives here."""
        if order_by is None:
            try:
                order_by = self.primary_key() or [ROWID]
            except Exception:  # a catalog without pg_index: storage order
                order_by = []
        return TableDataset(self.db.conninfo, self.name, columns=columns, order_by=order_by,
                            block_size=block_size, cache_blocks=cache_blocks, transform=transform,
                            connect_kwargs=self.db.connect_kwargs, snapshot=snapshot)


def _lit(s):
    """s as an SQL string literal."""
    return "'%s'" % str(s).replace("'", "''")


class TableDataset(_Base):
    """Row i of the table, as a dict of column name → value, for torch's own
    DataLoader (shuffling, sampling and batching are the DataLoader's).

    Position i is the i-th row in order_by order (the primary key by
    default; without a key, the system column _rowid, the rows' ids, which
    behaves as a key: a row keeps its id until it is deleted or updated;
    with order_by=(), the table's storage order, stable while the table
    does not change). Rows come through the tensor stream. When order_by is
    one column of distinct values (a one-column primary key, or _rowid),
    each process reads that column's values once, on its first access:
    then a block of block_size rows is one range query (`WHERE key
    BETWEEN ...`), and a read that does not follow the one before (a
    shuffling sampler's) fetches its row alone by key (`WHERE key = ...`,
    a primary key lookup). Otherwise blocks are read with `[ORDER BY ...]
    LIMIT block_size OFFSET b*block_size`; in storage order (no order_by)
    the server skips to the OFFSET without reading the rows before it,
    and a read that does not follow the one before fetches its row alone
    (`LIMIT 1 OFFSET i`). The last cache_blocks blocks are kept, so
    sequential and nearby reads cost one query per block.
    len() is count(*) when the dataset is made; rows added later are not
    seen. With a key, positions are fixed when the process first reads
    (each DataLoader worker reads the key column itself), and a row
    deleted since raises IndexError.

    Fixed columns come as tensors of one row's shape (numpy arrays without
    torch), ragged columns as a tensor of the row's shape, bytes columns as
    str (text, json) or bytes (bytea), None for NULL (torch's
    default_collate gathers str and bytes into lists but fails on None and
    on ragged rows of different shapes: pass a transform or a collate_fn).
    transform(row) is applied to each row dict.

    Each process (DataLoader worker) opens its own connection. Processes
    that first read at different times see the table as it is then, so on
    a table being written to their positions may disagree: pass snapshot
    (Database.export_snapshot()), and each process's connection holds a
    transaction reading that snapshot for its life; or snapshot=True, and
    the connection of the process that makes the dataset exports the
    snapshot its len() reads, held as long as that connection lives (the
    table's old versions are kept meanwhile: make a new dataset to see
    new rows).
    """

    def __init__(self, conninfo, table, columns=None, order_by=(), block_size=256, cache_blocks=4,
                 transform=None, connect_kwargs=None, snapshot=None):
        self.conninfo = conninfo
        self.table = table
        self.columns = columns
        self.order_by = list(order_by)
        self.block_size = int(block_size)
        self.cache_blocks = int(cache_blocks)
        self.transform = transform
        self.connect_kwargs = connect_kwargs or {}
        self.snapshot = snapshot
        self._conn = None
        self._pid = None
        self._cache = collections.OrderedDict()
        self._len = None
        # _keys: the order_by column's values in order (loaded on first
        # access; False when they cannot address rows); _last: the last
        # position read.
        self._keys = None
        self._last = -2
        with self._connection().cursor() as cur:
            cur.execute("SELECT count(*) FROM %s" % table)
            self._len = cur.fetchone()[0]
            # _system: order_by is the system column _rowid, which * does
            # not list.
            self._system = False
            if self.order_by == [ROWID]:
                cur.execute("SELECT * FROM %s LIMIT 0" % table)
                self._system = ROWID not in [d.name for d in cur.description]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_conn"], state["_pid"], state["_cache"] = None, None, collections.OrderedDict()
        state["_keys"], state["_last"] = None, -2
        return state

    def _connection(self):
        if self._conn is None or self._pid != os.getpid():
            import psycopg
            self._conn = psycopg.connect(self.conninfo, autocommit=True, **self.connect_kwargs)
            if self.snapshot is True:
                # This process's connection exports the snapshot the
                # others (DataLoader workers) import, and holds it.
                self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                self.snapshot = self._conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
            elif self.snapshot is not None:
                from psycopg import sql
                self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                self._conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(self.snapshot)))
            self._pid = os.getpid()
            self._cache.clear()
        return self._conn

    def __len__(self):
        return self._len

    def block_query(self, block, rows=None):
        """The query of block block (rows=None), or of the rows rows from
        position block."""
        cols = "*" if self.columns is None else ", ".join(quote_ident(c) for c in self.columns)
        sql = "SELECT %s FROM %s" % (cols, self.table)
        if self.order_by:
            sql += " ORDER BY " + ", ".join(quote_ident(c) for c in self.order_by)
        if rows is None:
            return sql + " LIMIT %d OFFSET %d" % (self.block_size, block * self.block_size)
        return sql + " LIMIT %d OFFSET %d" % (rows, block)

    def _fetch(self, query, key=None, keys_only=False):
        """The rows query returns, as dicts (none with keys_only), and the
        raw values of its column key (None: no key)."""
        sql = copy_sql(query, batch_size=65536 if keys_only else self.block_size)
        rows, keys = [], []
        for frame in stream_frames(self._connection(), sql):
            part = [(name, c, c.to_numpy()) for name, c in frame.columns.items()]
            for name, c, v in part:
                if name == key:
                    keys.extend(v.tolist() if hasattr(v, "tolist") else v)
            if keys_only:
                continue
            part = [p for p in part if p[0] != key or self._wants(key)]
            for j in range(frame.rows):
                rows.append({name: self._value(c, v[j]) for name, c, v in part})
        return rows, keys

    def _wants(self, name):
        if self.columns is None:
            return not (self._system and name == ROWID)
        return name in self.columns

    def _key_list(self):
        """The order_by column's values in order, or None when rows cannot
        be addressed by them (not one column, or values not distinct)."""
        if self._keys is None:
            self._keys = False
            if len(self.order_by) == 1:
                key = quote_ident(self.order_by[0])
                _, keys = self._fetch("SELECT %s FROM %s ORDER BY %s" % (key, self.table, key), self.order_by[0], keys_only=True)
                if None not in keys and len(set(keys)) == len(keys):
                    self._keys = keys
        return self._keys or None

    def _select(self, where, with_key=True):
        """The query of the rows where is true, with the key column to
        match them to positions unless with_key is false (one row by its
        key)."""
        key = self.order_by[0]
        cols = "*, " + ROWID if self._system and with_key else "*"
        if self.columns is not None:
            wanted = self.columns if key in self.columns or not with_key else self.columns + [key]
            cols = ", ".join(quote_ident(c) for c in wanted)
        # No ORDER BY: rows are matched to positions by key, and a plain
        # filtered scan lets the server read only the rows that pass.
        return "SELECT %s FROM %s WHERE %s" % (cols, self.table, where)

    def _literal(self, v):
        if type(v) is int:  # the common key; psycopg's Literal costs ~20 us
            return str(v)
        from psycopg import sql
        return sql.Literal(v).as_string(self._connection())

    def _keyed_block(self, block, keys):
        lo, hi = block * self.block_size, min((block + 1) * self.block_size, len(keys)) - 1
        if lo > hi:
            return []
        k = quote_ident(self.order_by[0])
        where = "%s >= %s AND %s <= %s" % (k, self._literal(keys[lo]), k, self._literal(keys[hi]))
        rows, got = self._fetch(self._select(where), self.order_by[0])
        # Rows inserted since with keys in the range are not the block's.
        by_key = dict(zip(got, rows))
        return [by_key.get(keys[p]) for p in range(lo, hi + 1)]

    def _keyed_row(self, i, keys):
        k = quote_ident(self.order_by[0])
        # One row: its key need not come back to place it.
        rows, _ = self._fetch(self._select("%s = %s" % (k, self._literal(keys[i])), with_key=False))
        return rows[0] if rows else None

    def _block(self, block):
        rows = self._cache.get(block)
        if rows is not None:
            self._cache.move_to_end(block)
            return rows
        keys = self._key_list()
        if keys is not None:
            rows = self._keyed_block(block, keys)
        else:
            rows, _ = self._fetch(self.block_query(block))
        self._cache[block] = rows
        while len(self._cache) > self.cache_blocks:
            self._cache.popitem(last=False)
        return rows

    @staticmethod
    def _value(col, v):
        if torch is None or v is None or col.kind not in (FIXED, RAGGED):
            return v
        if col.dtype_code == 8:
            import numpy as np
            return torch.from_numpy(np.ascontiguousarray(v).view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(v) if hasattr(v, "dtype") and v.shape else torch.tensor(v)

    def __getitems__(self, indices):
        """The rows at positions indices, in that order: what torch's
        DataLoader asks a map-style dataset for, a batch at a time. With a
        key, the rows not cached come in one query (`WHERE key IN (...)`,
        which the server answers with a primary key lookup per key).
        Without one, each row is its own query (`LIMIT 1 OFFSET i`)."""
        keys = self._key_list()
        if keys is None:
            return [self[i] for i in indices]
        out = [None] * len(indices)
        missing = {}
        for n, i in enumerate(indices):
            if i < 0:
                i += self._len
            if not 0 <= i < self._len:
                raise IndexError("row %d out of range (%d rows)" % (i, self._len))
            block, j = divmod(i, self.block_size)
            rows = self._cache.get(block)
            if rows is not None and j < len(rows) and rows[j] is not None:
                out[n] = rows[j]
            elif i < len(keys):
                missing.setdefault(keys[i], []).append(n)
            else:
                raise IndexError("row %d is gone (deleted since len() was taken)" % i)
        if missing:
            k = quote_ident(self.order_by[0])
            where = "%s IN (%s)" % (k, ", ".join(self._literal(v) for v in missing))
            rows, got = self._fetch(self._select(where), self.order_by[0])
            for v, row in zip(got, rows):
                for n in missing.get(v, ()):
                    out[n] = row
        for n, row in enumerate(out):
            if row is None:
                raise IndexError("row %d is gone (deleted since len() was taken)" % indices[n])
            row = dict(row)
            out[n] = self.transform(row) if self.transform else row
        return out

    def __getitem__(self, i):
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("row %d out of range (%d rows)" % (i, self._len))
        block, j = divmod(i, self.block_size)
        sequential, self._last = i == self._last + 1 or j == 0, i
        keys = None
        if block not in self._cache and not sequential:
            keys = self._key_list()
        if keys is not None:
            # A read that does not follow the last: the row alone.
            row = self._keyed_row(i, keys) if i < len(keys) else None
        elif not self.order_by and block not in self._cache and not sequential:
            # In storage order the server skips to an OFFSET without
            # reading the rows before it: the row alone as well.
            rows, _ = self._fetch(self.block_query(i, 1))
            row = rows[0] if rows else None
        else:
            rows = self._block(block)
            row = rows[j] if j < len(rows) else None
        if row is None:
            raise IndexError("row %d is gone (deleted since len() was taken)" % i)
        row = dict(row)
        return self.transform(row) if self.transform else row
