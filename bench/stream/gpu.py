"""The tensor stream into CUDA memory: deeplaked's Python loader with
to_torch(device="cuda"), against the anchors a training loop would use
instead, on a machine with a CUDA GPU. Prints one JSON line per reader.

    PYTHONPATH=python gpu.py ceilings DIR BATCH
    PYTHONPATH=python gpu.py loader DIR BATCH DSN NAME [pin|nopin] [cuda|cpu]

ceilings measures, over the benchmark's rows (DIR/images.npy, from
anchors.py gen):
  - host-to-device copies of BATCH images from one pinned buffer (the
    ceiling of a copy engine fed batch by batch);
  - the same from a shared memory area (memfd, MAP_SHARED, as the loader
    maps SHARED_MEMORY) registered with cudaHostRegister, batch after
    batch through a 256 MiB area;
  - the .npy read as a plain PyTorch loop does: numpy.load(mmap_mode='r'),
    each batch pinned (pin_memory) and copied with non_blocking=True.
loader streams the table "samples" (image, label) through the Python
loader into CUDA tensors and checks every row: each image's byte sum and
each label, computed on the GPU, must equal those of DIR's .npy files
(into CPU tensors, "cpu", it touches the shapes only, as loader.py does).
A stream's time ends once every copy to the device is done
(torch.cuda.synchronize); the first batch's time is when its tensors are
on the device.
"""

import json
import mmap
import os
import resource
import sys
import time

import numpy as np
import torch

ITEM = 3 * 64 * 64


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def report(name, rows, seconds, first, **extra):
    r = {"name": name, "rows": rows, "bytes": rows * ITEM, "seconds": seconds,
         "gb_per_s": rows * ITEM / seconds / 1e9, "samples_per_s": rows / seconds,
         "first_batch_ms": first * 1000,
         "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    r.update(extra)  # may replace peak_rss_mb
    print(json.dumps(r), flush=True)


def ceilings(src, batch):
    images = np.load(f"{src}/images.npy", mmap_mode="r")
    rows = len(images)
    nb = (rows + batch - 1) // batch
    dev = torch.device("cuda")
    dst = [torch.empty((batch, 3, 64, 64), dtype=torch.uint8, device=dev) for _ in range(4)]

    # One pinned buffer, copied batch after batch.
    pinned = torch.from_numpy(np.ascontiguousarray(images[:batch])).pin_memory()
    for i in range(8):
        dst[i % 4].copy_(pinned, non_blocking=True)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(nb):
        n = min(batch, rows - i * batch)
        dst[i % 4][:n].copy_(pinned[:n], non_blocking=True)
    torch.cuda.synchronize()
    report("host-to-device copy ceiling (one pinned buffer)", rows, time.perf_counter() - start, 0)

    # A memfd area registered with CUDA: frames placed one after another,
    # as the server places them, each copied straight from the area.
    size = 256 << 20
    fd = os.memfd_create("gpu-bench")
    os.ftruncate(fd, size)
    mm = mmap.mmap(fd, size)
    os.close(fd)
    area = np.frombuffer(mm, dtype=np.uint8)
    area[:] = 1  # allocate the pages
    cudart = torch.cuda.cudart()
    t0 = time.perf_counter()
    err = cudart.cudaHostRegister(area.ctypes.data, size, 0)
    reg_ms = (time.perf_counter() - t0) * 1000
    if int(err) != 0:
        print(json.dumps({"name": "registered shared area", "error": str(err)}), flush=True)
    else:
        frame = batch * ITEM
        slots = size // frame
        view = torch.from_numpy(area)
        start = time.perf_counter()
        for i in range(nb):
            n = min(batch, rows - i * batch)
            off = (i % slots) * frame
            dst[i % 4][:n].view(-1).copy_(view[off:off + n * ITEM], non_blocking=True)
        torch.cuda.synchronize()
        report("host-to-device copy from a registered shared area (memfd)", rows, time.perf_counter() - start, 0,
               register_ms=reg_ms, is_pinned=bool(view.is_pinned()))
        cudart.cudaHostUnregister(area.ctypes.data)

    # The .npy read as a plain loop reads it into the GPU.
    start = time.perf_counter()
    first = None
    for i in range(nb):
        b = torch.from_numpy(np.ascontiguousarray(images[i * batch:(i + 1) * batch])).pin_memory()
        g = b.to(dev, non_blocking=True)
        if first is None:
            torch.cuda.synchronize()
            first = time.perf_counter() - start
    torch.cuda.synchronize()
    report("local .npy (numpy.load(mmap_mode='r')), pin_memory, to cuda", rows, time.perf_counter() - start, first)
    del g


def loader(src, batch, dsn, name, pin="pin", where="cuda"):
    import deeplaked
    from deeplaked import device
    images = np.load(f"{src}/images.npy", mmap_mode="r")
    labels = np.load(f"{src}/labels.npy")
    rows = len(labels)
    dev = torch.device(where)
    check = dev.type == "cuda"
    sums = torch.empty(rows, dtype=torch.int64, device=dev)
    got_labels = torch.empty(rows, dtype=torch.int32, device=dev)
    db = deeplaked.connect(dsn)
    ld = (db.dataloader("samples").columns(["image", "label"]).batch_size(batch)
          .to_torch(device=where, pin_memory=(pin == "pin")))
    start = time.perf_counter()
    first = None
    at = 0
    for b in ld:
        im, lab = b["image"], b["label"]
        if first is None:
            if check:
                sync()
            first = time.perf_counter() - start
        n = im.shape[0]
        assert im.device.type == dev.type and tuple(im.shape[1:]) == (3, 64, 64), (im.device, im.shape)
        if check:
            sums[at:at + n] = im.view(n, -1).sum(dim=1, dtype=torch.int64)
            got_labels[at:at + n] = lab
        at += n
    sync()
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the .npy is read
    if not check:  # summing on the CPU would take longer than the stream
        report(name, at, seconds, first or 0)
        return
    want = np.empty(rows, dtype=np.int64)
    for i in range(0, rows, 10000):
        want[i:i + 10000] = images[i:i + 10000].reshape(-1, ITEM).sum(axis=1, dtype=np.int64)
    ok = at == rows and bool((sums.cpu().numpy() == want).all()) and bool((got_labels.cpu().numpy() == labels).all())
    report(name, at, seconds, first or 0, verified=ok, direct_frames=device.stats.direct, peak_rss_mb=rss)
    if not ok:
        sys.exit("%s: the rows on the device differ from the .npy files (%d rows of %d)" % (name, at, rows))


if __name__ == "__main__":
    if not torch.cuda.is_available() and sys.argv[-1] != "cpu":
        sys.exit("gpu.py: no CUDA GPU here (only 'loader ... cpu' runs without one)")
    if sys.argv[1] == "ceilings":
        ceilings(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "loader":
        loader(sys.argv[2], int(sys.argv[3]), *sys.argv[4:])
    else:
        sys.exit(__doc__)
