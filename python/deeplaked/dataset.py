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


class Table:
    """A table of a Database (db.open_table(name))."""

    def __init__(self, db, name):
        self.db = db
        self.name = name

    def __len__(self):
        return self.db.execute("SELECT count(*) FROM %s" % self.name)[0][0]

    def primary_key(self):
        """The primary key's columns, in order, or [] when the table has none
        (or the catalog cannot say)."""
        schema, _, table = self.name.rpartition(".")
        rows = self.db.execute(
            "SELECT a.attname FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indisprimary AND c.relname = %s AND n.nspname = %s ORDER BY a.attnum",
            (table.strip('"'), (schema or "public").strip('"')))
        return [r[0] for r in rows or []]

    def pytorch(self, columns=None, order_by=None, block_size=256, cache_blocks=4, transform=None):
        """A map-style dataset over the table (see TableDataset)."""
        if order_by is None:
            try:
                order_by = self.primary_key()
            except Exception:  # a catalog without pg_index: storage order
                order_by = []
        return TableDataset(self.db.conninfo, self.name, columns=columns, order_by=order_by,
                            block_size=block_size, cache_blocks=cache_blocks, transform=transform,
                            connect_kwargs=self.db.connect_kwargs)


class TableDataset(_Base):
    """Row i of the table, as a dict of column name → value, for torch's own
    DataLoader (shuffling, sampling and batching are the DataLoader's).

    Position i is the i-th row in order_by order (the primary key by
    default; without a key, the table's storage order, stable while the
    table does not change). Rows are fetched in blocks of block_size with
    `SELECT ... ORDER BY key OFFSET b*block_size LIMIT block_size` through
    the tensor stream, and the last cache_blocks blocks are kept, so
    sequential and nearby reads cost one query per block. len() is count(*)
    when the dataset is made; rows added later are not seen.

    Fixed columns come as tensors of one row's shape (numpy arrays without
    torch), ragged columns as a tensor of the row's shape, bytes columns as
    str (text, json) or bytes (bytea), None for NULL (torch's
    default_collate gathers str and bytes into lists but fails on None and
    on ragged rows of different shapes: pass a transform or a collate_fn).
    transform(row) is applied to each row dict.

    Each process (DataLoader worker) opens its own connection.
    """

    def __init__(self, conninfo, table, columns=None, order_by=(), block_size=256, cache_blocks=4,
                 transform=None, connect_kwargs=None):
        self.conninfo = conninfo
        self.table = table
        self.columns = columns
        self.order_by = list(order_by)
        self.block_size = int(block_size)
        self.cache_blocks = int(cache_blocks)
        self.transform = transform
        self.connect_kwargs = connect_kwargs or {}
        self._conn = None
        self._pid = None
        self._cache = collections.OrderedDict()
        self._len = None
        with self._connection().cursor() as cur:
            cur.execute("SELECT count(*) FROM %s" % table)
            self._len = cur.fetchone()[0]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_conn"], state["_pid"], state["_cache"] = None, None, collections.OrderedDict()
        return state

    def _connection(self):
        if self._conn is None or self._pid != os.getpid():
            import psycopg
            self._conn = psycopg.connect(self.conninfo, autocommit=True, **self.connect_kwargs)
            self._pid = os.getpid()
            self._cache.clear()
        return self._conn

    def __len__(self):
        return self._len

    def block_query(self, block):
        cols = "*" if self.columns is None else ", ".join(quote_ident(c) for c in self.columns)
        sql = "SELECT %s FROM %s" % (cols, self.table)
        if self.order_by:
            sql += " ORDER BY " + ", ".join(quote_ident(c) for c in self.order_by)
        return sql + " LIMIT %d OFFSET %d" % (self.block_size, block * self.block_size)

    def _block(self, block):
        rows = self._cache.get(block)
        if rows is not None:
            self._cache.move_to_end(block)
            return rows
        sql = copy_sql(self.block_query(block), batch_size=self.block_size)
        names, cols, n = None, [], 0
        for frame in stream_frames(self._connection(), sql):
            names = list(frame.columns)
            cols.append([(c, c.to_numpy()) for c in frame.columns.values()])
            n += frame.rows
        rows = []
        for part in cols:
            count = len(part[0][1]) if part else 0
            for j in range(count):
                rows.append({names[k]: self._value(c, v[j]) for k, (c, v) in enumerate(part)})
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

    def __getitem__(self, i):
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("row %d out of range (%d rows)" % (i, self._len))
        rows = self._block(i // self.block_size)
        j = i % self.block_size
        if j >= len(rows):
            raise IndexError("row %d is gone (the table shrank since len() was taken)" % i)
        row = dict(rows[j])
        return self.transform(row) if self.transform else row
