"""Measures random and in-order reads of single rows through deeplaked's
map-style dataset (open_table(...).pytorch()) on the benchmark table, and
the anchors: PostgreSQL 15 read row by row with psycopg through an index on
id, and the local .npy read with numpy.load(mmap_mode='r'). Prints one JSON
line per reader and mode (rows/s).

    PYTHONPATH=python mapds.py dl DSN SECONDS     deeplaked, table samples (by its primary key, by _rowid, in storage order)
    mapds.py pg DSN SECONDS                       PostgreSQL, WHERE id = i (indexes id first)
    mapds.py npy DIR SECONDS                      images.npy and labels.npy in DIR

Random: uniformly drawn positions for SECONDS. In order: consecutive
positions from a random start for SECONDS. Batches of 64: what
DataLoader(batch_size=64, shuffle=True) asks for, 64 random positions at a
time, stacked into tensors: deeplaked's dataset through torch's own
DataLoader (one query per batch, __getitems__), PostgreSQL by
`WHERE id = ANY(%s)` with the batch's ids.
"""

import json
import random
import sys
import time

import numpy as np

SHAPE = (3, 64, 64)


def measure(name, n, read, seconds):
    rng = random.Random(11)
    for mode in ("random", "in order"):
        start = time.perf_counter()
        i = rng.randrange(n // 2)
        rows = 0
        while time.perf_counter() - start < seconds:
            image, label = read(rng.randrange(n) if mode == "random" else (i + rows) % n)
            assert tuple(image.shape) == SHAPE
            rows += 1
        el = time.perf_counter() - start
        print(json.dumps({"name": name, "mode": mode, "rows": rows, "seconds": el, "rows_per_s": rows / el}), flush=True)


BATCH = 64


def measure_batches(name, n, read_batch, seconds):
    """rows/s of batches of BATCH random positions for seconds."""
    rng = random.Random(12)
    start = time.perf_counter()
    rows = 0
    while time.perf_counter() - start < seconds:
        images, labels = read_batch([rng.randrange(n) for _ in range(BATCH)])
        assert tuple(images.shape) == (BATCH,) + SHAPE and len(labels) == BATCH
        rows += BATCH
    el = time.perf_counter() - start
    print(json.dumps({"name": name, "mode": "batches of 64", "rows": rows, "seconds": el, "rows_per_s": rows / el}), flush=True)


def dl(dsn, seconds):
    import deeplaked
    table = deeplaked.connect(dsn).open_table("samples")
    # By the primary key (its values read once, then a row is a primary
    # key lookup), by _rowid (as a table without a key is read: the ids
    # read once, then a row is read by id), then in storage order
    # (LIMIT 1 OFFSET i).
    for name, order_by in (("primary key", None), ("_rowid", ["_rowid"]), ("storage order", ())):
        ds = table.pytorch(columns=["image", "label"], order_by=order_by)
        measure("deeplaked, map-style dataset, " + name, len(ds), lambda i: (lambda r: (r["image"], r["label"]))(ds[i]), seconds)
        # As torch's DataLoader fetches a batch: __getitems__, then its
        # default collate stacks the rows.
        from torch.utils.data import default_collate
        measure_batches("deeplaked, map-style dataset, " + name, len(ds),
                        lambda idx: (lambda b: (b["image"], b["label"]))(default_collate(ds.__getitems__(idx))), seconds)


def pg(dsn, seconds):
    import psycopg
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("CREATE INDEX IF NOT EXISTS samples_id ON samples (id)")
    n = conn.execute("SELECT count(*) FROM samples").fetchone()[0]
    cur = conn.cursor(binary=True)

    def read(i):
        image, label = cur.execute("SELECT image, label FROM samples WHERE id = %s", (i,)).fetchone()
        return np.frombuffer(image, np.uint8).reshape(SHAPE), label
    measure("PostgreSQL 15, psycopg SELECT by indexed id", n, read, seconds)

    import torch

    def read_batch(ids):
        got = {i: (image, label) for i, image, label in cur.execute(
            "SELECT id, image, label FROM samples WHERE id = ANY(%s)", (ids,)).fetchall()}
        rows = [got[i] for i in ids]
        images = torch.stack([torch.from_numpy(np.frombuffer(r[0], np.uint8).reshape(SHAPE)) for r in rows])
        return images, torch.tensor([r[1] for r in rows])
    measure_batches("PostgreSQL 15, psycopg SELECT by indexed id", n, read_batch, seconds)


def npy(src, seconds):
    images = np.load(f"{src}/images.npy", mmap_mode="r")
    labels = np.load(f"{src}/labels.npy", mmap_mode="r")
    # np.array copies: the row's pages are read.
    measure("local .npy, numpy.load(mmap_mode='r')", len(labels), lambda i: (np.array(images[i]), int(labels[i])), seconds)
    measure_batches("local .npy, numpy.load(mmap_mode='r')", len(labels),
                    lambda idx: (images[sorted(idx)], labels[sorted(idx)]), seconds)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("dl", "pg", "npy"):
        sys.exit(__doc__)
    {"dl": dl, "pg": pg, "npy": npy}[sys.argv[1]](sys.argv[2], float(sys.argv[3]))
