"""The anchors of the tensor-stream benchmark (see README.md).

    anchors.py gen DIR ROWS                 write DIR/images.npy (ROWS x 3 x 64 x 64 uint8) and DIR/labels.npy
    anchors.py load-pg DSN DIR              load them into PostgreSQL: samples (id int, image bytea, label int)
    anchors.py load-dl DSN DIR              load them into deeplaked: samples (id int, image uint8[3][64][64], label int)
    anchors.py pg-copy DSN BATCH            COPY ... TO STDOUT (FORMAT binary) with psycopg into torch batches
    anchors.py pg-select DSN BATCH          a plain SELECT with psycopg into torch batches
    anchors.py npy DIR BATCH                numpy.load(mmap_mode='r') into torch batches

Each measurement prints one JSON line: rows, image bytes, seconds, GB/s,
samples/s, time to the first batch and the process's peak memory.
"""

import json
import resource
import sys
import time

import numpy as np
import psycopg
import torch

SHAPE = (3, 64, 64)
ITEM = 3 * 64 * 64


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(name, rows, seconds, first):
    nbytes = rows * ITEM
    print(json.dumps({
        "name": name, "rows": rows, "bytes": nbytes, "seconds": seconds,
        "gb_per_s": nbytes / seconds / 1e9, "samples_per_s": rows / seconds,
        "first_batch_ms": first * 1000, "peak_rss_mb": peak_rss_mb(),
    }), flush=True)


def gen(out, rows):
    rng = np.random.default_rng(7)
    images = np.lib.format.open_memmap(f"{out}/images.npy", mode="w+", dtype=np.uint8, shape=(rows,) + SHAPE)
    step = 10000
    for i in range(0, rows, step):
        n = min(step, rows - i)
        images[i:i + n] = rng.integers(0, 256, size=(n,) + SHAPE, dtype=np.uint8)
    images.flush()
    np.save(f"{out}/labels.npy", rng.integers(0, 1000, size=rows, dtype=np.int32))


def load_pg(dsn, src):
    images = np.load(f"{src}/images.npy", mmap_mode="r")
    labels = np.load(f"{src}/labels.npy")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS samples")
        conn.execute("CREATE TABLE samples (id int, image bytea, label int)")
        with conn.cursor().copy("COPY samples FROM STDIN (FORMAT binary)") as copy:
            copy.set_types(["int4", "bytea", "int4"])
            for i in range(len(labels)):
                copy.write_row((i, images[i].tobytes(), int(labels[i])))
        conn.execute("VACUUM ANALYZE samples")


def load_dl(dsn, src):
    """Loads the images as a tensor column with binary COPY: each image in
    PostgreSQL's array form (smallint elements, a length before each), built
    for a whole block of rows at once with numpy."""
    images = np.load(f"{src}/images.npy", mmap_mode="r")
    labels = np.load(f"{src}/labels.npy")
    elem = np.dtype([("len", ">i4"), ("val", ">i2")])
    head = np.array([3, 0, 21, 3, 1, 64, 1, 64, 1], dtype=">i4").tobytes()
    # One row: int16 field count, then id, image and label fields.
    row = np.dtype([("nf", ">i2"), ("idlen", ">i4"), ("id", ">i4"), ("imglen", ">i4"),
                    ("imghead", "V%d" % len(head)), ("elems", elem, ITEM), ("lablen", ">i4"), ("label", ">i4")])
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS samples")
        conn.execute("CREATE TABLE samples (id int PRIMARY KEY, image uint8[3][64][64], label int)")
        with conn.cursor().copy("COPY samples FROM STDIN (FORMAT binary)") as copy:
            copy.write(b"PGCOPY\n\xff\r\n\x00" + bytes(8))
            step = 1000
            for i in range(0, len(labels), step):
                n = min(step, len(labels) - i)
                block = np.zeros(n, dtype=row)
                block["nf"] = 3
                block["idlen"] = 4
                block["id"] = np.arange(i, i + n)
                block["imglen"] = len(head) + ITEM * elem.itemsize
                block["imghead"] = np.frombuffer(head, dtype="V%d" % len(head))[0]
                block["elems"]["len"] = 2
                block["elems"]["val"] = images[i:i + n].reshape(n, ITEM)
                block["lablen"] = 4
                block["label"] = labels[i:i + n]
                copy.write(block.tobytes())
            copy.write(b"\xff\xff")
        conn.execute("VACUUM samples")


def batches_to_torch(rows_iter, batch):
    """Assembles (image bytes, label) rows into torch batches; yields them."""
    imgs, labs = [], []
    for image, label in rows_iter:
        imgs.append(image)
        labs.append(label)
        if len(imgs) == batch:
            yield (torch.from_numpy(np.frombuffer(b"".join(imgs), np.uint8).reshape((batch,) + SHAPE)),
                   torch.tensor(labs, dtype=torch.int32))
            imgs, labs = [], []
    if imgs:
        yield (torch.from_numpy(np.frombuffer(b"".join(imgs), np.uint8).reshape((len(imgs),) + SHAPE)),
               torch.tensor(labs, dtype=torch.int32))


def consume(name, batches):
    start = time.perf_counter()
    first = None
    rows = 0
    for images, labels in batches:
        if first is None:
            first = time.perf_counter() - start
        rows += images.shape[0]
        assert images.shape[1:] == SHAPE and labels.shape[0] == images.shape[0]
    report(name, rows, time.perf_counter() - start, first or 0)


def pg_copy(dsn, batch):
    def rows():
        with psycopg.connect(dsn) as conn:
            with conn.cursor().copy("COPY (SELECT image, label FROM samples) TO STDOUT (FORMAT binary)") as copy:
                copy.set_types(["bytea", "int4"])
                for image, label in copy.rows():
                    yield image, label
    consume("PostgreSQL 15, psycopg COPY (FORMAT binary)", batches_to_torch(rows(), batch))


def pg_select(dsn, batch):
    def rows():
        with psycopg.connect(dsn) as conn:
            cur = conn.cursor(binary=True)
            cur.execute("SELECT image, label FROM samples")
            while True:
                chunk = cur.fetchmany(batch)
                if not chunk:
                    return
                yield from chunk
    consume("PostgreSQL 15, psycopg SELECT", batches_to_torch(rows(), batch))


def npy(src, batch):
    def batches():
        images = np.load(f"{src}/images.npy", mmap_mode="r")
        labels = np.load(f"{src}/labels.npy", mmap_mode="r")
        for i in range(0, len(labels), batch):
            # np.array copies: the pages are read, as a loader's batch
            # must be; a slice of the memmap alone reads nothing.
            yield (torch.from_numpy(np.array(images[i:i + batch])),
                   torch.from_numpy(np.array(labels[i:i + batch])))
    consume("local .npy, numpy.load(mmap_mode='r')", batches())


def main(argv):
    cmd = argv[1]
    if cmd == "gen":
        gen(argv[2], int(argv[3]))
    elif cmd == "load-pg":
        load_pg(argv[2], argv[3])
    elif cmd == "load-dl":
        load_dl(argv[2], argv[3])
    elif cmd == "pg-copy":
        pg_copy(argv[2], int(argv[3]))
    elif cmd == "pg-select":
        pg_select(argv[2], int(argv[3]))
    elif cmd == "npy":
        npy(argv[2], int(argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
