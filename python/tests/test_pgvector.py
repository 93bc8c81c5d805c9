"""A pgvector user's workflow over plain psycopg 3, with only the connection
string changed: CREATE EXTENSION vector, the type lookup pgvector-python's
register_vector does (psycopg's TypeInfo.fetch), numpy arrays sent and read
in pgvector's text and binary forms, an hnsw index and k-nearest searches
checked against numpy. DEEPLAKED_DSN names the server (test/pyclient starts
one); without it the tests are skipped."""

import os
import struct

import numpy as np
import pytest

psycopg = pytest.importorskip("psycopg")
from psycopg.adapt import Dumper, Loader  # noqa: E402
from psycopg.pq import Format  # noqa: E402
from psycopg.types import TypeInfo  # noqa: E402

DSN = os.environ.get("DEEPLAKED_DSN")
pytestmark = pytest.mark.skipif(not DSN, reason="DEEPLAKED_DSN not set")


class VectorTextDumper(Dumper):
    def dump(self, v):
        return ("[" + ",".join(repr(float(x)) for x in np.asarray(v, np.float32)) + "]").encode()


class VectorBinaryDumper(Dumper):
    format = Format.BINARY

    def dump(self, v):
        a = np.asarray(v, ">f4")
        return struct.pack(">HH", a.shape[0], 0) + a.tobytes()


class VectorTextLoader(Loader):
    def load(self, data):
        return np.array([float(x) for x in bytes(data).decode()[1:-1].split(",")], np.float32)


class VectorBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data):
        dim, unused = struct.unpack_from(">HH", data)
        assert unused == 0
        return np.frombuffer(data, ">f4", dim, 4).astype(np.float32)


def register_vector(conn, binary):
    """What pgvector-python's register_vector does: look the types up by
    name (None when the server has no such type) and register adapters."""
    info = TypeInfo.fetch(conn, "vector")
    assert info is not None, "vector type not found"
    info.register(conn)
    dumper = VectorBinaryDumper if binary else VectorTextDumper
    dumper = type(dumper.__name__, (dumper,), {"oid": info.oid})
    conn.adapters.register_dumper(np.ndarray, dumper)
    conn.adapters.register_loader(info.oid, VectorTextLoader)
    conn.adapters.register_loader(info.oid, VectorBinaryLoader)
    return info


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(20, 16)).astype(np.float32)
    rows = centres[rng.integers(0, 20, 2000)] + rng.normal(scale=0.3, size=(2000, 16)).astype(np.float32)
    return rows.astype(np.float32)


@pytest.mark.parametrize("binary", [False, True])
def test_pgvector_workflow(data, binary):
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        info = register_vector(conn, binary)
        assert info.name == "vector"
        # register_vector also asks for types a server may lack.
        assert TypeInfo.fetch(conn, "sparsevec") is None
        assert TypeInfo.fetch(conn, "halfvec") is not None
        assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]

        table = "pgv_binary" if binary else "pgv_text"
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, embedding vector(16), cat int)")
        with conn.cursor() as cur:
            fmt = "BINARY" if binary else "TEXT"
            with cur.copy(f"COPY {table} (embedding, cat) FROM STDIN WITH (FORMAT {fmt})") as copy:
                copy.set_types(["vector", "int4"])
                for i, v in enumerate(data[:1500]):
                    copy.write_row((v, i % 10))
            cur.executemany(f"INSERT INTO {table} (embedding, cat) VALUES (%s, %s)",
                            [(v, (1500 + i) % 10) for i, v in enumerate(data[1500:])])
        conn.execute(f"CREATE INDEX ON {table} USING hnsw (embedding vector_l2_ops)")
        conn.execute("SET hnsw.ef_search = 100")

        got = conn.execute(f"SELECT embedding FROM {table} WHERE id = 3", binary=binary).fetchone()[0]
        assert isinstance(got, np.ndarray) and np.array_equal(got, data[2])

        q = data[42] + np.float32(0.01)
        rows = conn.execute(f"SELECT id, embedding <-> %s AS d FROM {table} ORDER BY embedding <-> %s LIMIT 5",
                            (q, q), binary=binary).fetchall()
        dist = np.linalg.norm(data - q, axis=1)
        want = np.argsort(dist, kind="stable")[:5] + 1
        assert [r[0] for r in rows] == want.tolist()
        assert np.allclose([r[1] for r in rows], dist[want - 1], rtol=1e-5)

        rows = conn.execute(f"SELECT id FROM {table} WHERE cat = 3 ORDER BY embedding <=> %s LIMIT 5",
                            (q,), binary=binary).fetchall()
        cos = 1 - data @ q / (np.linalg.norm(data, axis=1) * np.linalg.norm(q))
        cat = np.arange(len(data)) % 10 == 3
        want = np.where(cat)[0][np.argsort(cos[cat], kind="stable")[:5]] + 1
        assert [r[0] for r in rows] == want.tolist()

        # The wrong dimension is pgvector's error.
        with pytest.raises(psycopg.errors.DataException):
            conn.execute(f"SELECT id FROM {table} ORDER BY embedding <-> %s LIMIT 1", (q[:3],))
