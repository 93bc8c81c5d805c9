"""One rank of a DistributedDataParallel-style run, for test_server's
test_ddp_ranks: torch.distributed (gloo) gives the rank and world size, the
loader shards by them across ranks and DataLoader workers, and set_epoch
names each epoch. Rank 1 writes to the table (an insert and a VACUUM,
which flushes the buffered rows) just before each of its epochs, after
rank 0 has begun the epoch. Prints one JSON line: the ids this rank read,
per epoch.

    python3 ddp_rank.py DSN TABLE RANK WORLD PORT EPOCHS CONTEXT WRITE

CONTEXT is the DataLoader workers' start method (fork, spawn); WRITE 0
leaves the table alone.
"""

import json
import sys
import time

import psycopg
import torch
import torch.distributed as dist

import deeplaked


def main(dsn, table, rank, world, port, epochs, context, write):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world)
    db = deeplaked.connect(dsn)
    loader = db.dataloader(table).columns(["id"]).batch_size(500).shuffle(True).to_torch()
    out = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        dist.barrier()
        if rank == 1 and write:
            time.sleep(1.5)  # rank 0's workers have begun the epoch
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("INSERT INTO %s VALUES (%d)" % (table, 90000 + epoch))
                c.execute("VACUUM %s" % table)
        dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2, multiprocessing_context=context)
        out.append([int(i) for b in dl for i in b["id"]])
    dist.barrier()
    dist.destroy_process_group()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5]), a[6], a[7] == "1")
