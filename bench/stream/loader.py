"""Measures deeplaked's Python loader reading the benchmark table into torch
batches; prints one JSON line like the anchors (anchors.py).

    PYTHONPATH=python loader.py DSN BATCH [socket|copy]

Over a Unix socket DSN the loader asks for SHARED_MEMORY by itself; with
"socket" it is turned off (.shared_memory(False)), so the frames come
through the socket. The loop touches the shapes only; with "copy" it also
copies each batch's images into one tensor allocated beforehand, reading
every byte as a copy to a GPU does (over SHARED_MEMORY the batches are
views of the shared area, which nothing else reads).
"""

import json
import resource
import sys
import time

import deeplaked

ITEM = 3 * 64 * 64


def main(dsn, batch, mode=""):
    db = deeplaked.connect(dsn)
    loader = db.dataloader("samples").columns(["image", "label"]).batch_size(batch)
    name = "deeplaked, Python loader (to_torch)"
    if mode == "socket":
        loader = loader.shared_memory(False)
    elif db.conn.info.host.startswith("/"):
        name += ", SHARED_MEMORY"
    dst = None
    if mode == "copy":
        import torch
        dst = torch.empty((batch, 3, 64, 64), dtype=torch.uint8)
        name += ", copied out"
    start = time.perf_counter()
    first = None
    rows = 0
    for b in loader.to_torch():
        if first is None:
            first = time.perf_counter() - start
        images, labels = b["image"], b["label"]
        assert tuple(images.shape[1:]) == (3, 64, 64) and labels.shape[0] == images.shape[0]
        if dst is not None:
            dst[:images.shape[0]].copy_(images)
        rows += images.shape[0]
    seconds = time.perf_counter() - start
    print(json.dumps({
        "name": name, "rows": rows, "bytes": rows * ITEM, "seconds": seconds,
        "gb_per_s": rows * ITEM / seconds / 1e9, "samples_per_s": rows / seconds,
        "first_batch_ms": (first or 0) * 1000,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:])
