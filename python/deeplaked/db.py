"""Connections."""

import psycopg


def connect(conninfo, **kwargs):
    """Connect to a deeplaked server (a libpq connection string or URL).
    Keyword arguments go to psycopg.connect."""
    return Database(conninfo, **kwargs)


class Database:
    """A connection in autocommit mode plus the connection string, which
    loaders use to open their own connections (one per DataLoader worker)."""

    def __init__(self, conninfo, **kwargs):
        self.conninfo = conninfo
        self.connect_kwargs = kwargs
        self.conn = self.new_connection()

    def new_connection(self):
        return psycopg.connect(self.conninfo, autocommit=True, **self.connect_kwargs)

    def execute(self, sql, params=None):
        """Run a statement; returns its rows when it has any, else None."""
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            if cur.description is not None:
                return cur.fetchall()
            return None

    def export_snapshot(self):
        """A context manager: a transaction on a connection of its own that
        exports its snapshot (pg_export_snapshot()) and stays open until
        the block ends, yielding the snapshot's identifier. Loaders given
        it (.snapshot(id)), in any process or on any rank, read the table
        as that snapshot sees it, so the shards of an epoch agree even if
        the table changes meanwhile. Under torch.distributed, export on one
        rank and broadcast the identifier (broadcast_object_list)."""
        return _ExportedSnapshot(self)

    def dataloader(self, source):
        """A loader over a table name or a SELECT statement (see DataLoader)."""
        from .loader import DataLoader
        return DataLoader(self, source)

    def open_table(self, name, version=None):
        """A table, whose .pytorch() is a map-style dataset; with version
        (a commit id, tag, branch, version number or time), that version
        of it (see Table.checkout)."""
        from .dataset import Table
        t = Table(self, name)
        if version is not None:
            t.checkout(version)
        return t

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _ExportedSnapshot:
    def __init__(self, db):
        self._db = db
        self._conn = None

    def __enter__(self):
        self._conn = psycopg.connect(self._db.conninfo, **self._db.connect_kwargs)
        try:
            return self._conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
        except BaseException:
            self._conn.close()
            raise

    def __exit__(self, *exc):
        self._conn.rollback()
        self._conn.close()
