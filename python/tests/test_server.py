"""Tests against a running server: DEEPLAKED_DSN names it (the Go test
test/pyclient starts one); without it they are skipped."""

import os
import random
import sys
import time

import numpy as np
import pytest

import deeplaked

DSN = os.environ.get("DEEPLAKED_DSN")
pytestmark = pytest.mark.skipif(not DSN, reason="DEEPLAKED_DSN not set")


@pytest.fixture(scope="module")
def db():
    d = deeplaked.connect(DSN)
    yield d
    d.close()


def test_issue_schema(db):
    # The issue's table, BLOB included (an alias of bytea).
    db.execute("CREATE TABLE IF NOT EXISTS training_samples (id SERIAL PRIMARY KEY, text TEXT, "
               "embedding VECTOR(1536), image BLOB, label INT, metadata JSONB)")
    db.execute("CREATE TABLE IF NOT EXISTS training_samples (id SERIAL PRIMARY KEY, text TEXT, "
               "embedding VECTOR(1536), image BLOB, label INT, metadata JSONB)")
    rows = db.execute("SELECT column_name, data_type FROM information_schema.columns "
                      "WHERE table_name = 'training_samples' ORDER BY ordinal_position")
    assert [r[0] for r in rows] == ["id", "text", "embedding", "image", "label", "metadata"]
    assert rows[3][1] == "bytea"


ROWS = 100


@pytest.fixture(scope="module")
def samples(db):
    db.execute("DROP TABLE IF EXISTS samples")
    db.execute("CREATE TABLE samples (id SERIAL PRIMARY KEY, text TEXT, embedding VECTOR(4), image BLOB, "
               "label INT, metadata JSONB, t uint8[2][2], r float32[], b bfloat16[2])")
    db.execute("INSERT INTO samples (text, embedding, image, label, metadata, t, r, b) "
               "SELECT 'row' || g, ('[' || g || ',1,2,3]')::vector, '\\xdead'::bytea, "
               "CASE WHEN g % 3 = 0 THEN NULL ELSE g % 5 END, "
               "CASE WHEN g % 2 = 0 THEN '{\"quality\": \"high\"}' ELSE '{\"quality\": \"low\"}' END::jsonb, "
               "'{{1,2},{3,4}}'::uint8[2][2], ('{' || g || '}')::float32[], '{1.5,2}'::bfloat16[2] "
               "FROM generate_series(1, " + str(ROWS) + ") g")
    # Streams compared within a test (seeds, shards, START_BATCH) must see
    # one layout: VACUUM flushes the buffered rows now, not the server's
    # flusher in the middle of a test.
    db.execute("VACUUM samples")
    return "samples"


def ids(loader):
    return [int(i) for b in loader for i in b["id"]]


def test_stream_numpy(db, samples):
    batches = list(db.dataloader(samples).batch_size(32).with_validity())
    assert [len(b["id"]) for b in batches] == [32, 32, 32, 4]
    b = batches[0]
    assert b["embedding"].shape == (32, 4) and b["embedding"].dtype == np.float32
    assert b["embedding"][4].tolist() == [5, 1, 2, 3]
    assert b["t"].shape == (32, 2, 2) and b["t"][0].tolist() == [[1, 2], [3, 4]]
    assert b["text"][0] == "row1" and b["image"][0] == b"\xde\xad"
    assert b["r"][6].tolist() == [7.0]
    assert b["label.valid"][:4].tolist() == [True, True, False, True]
    assert b["label"][2] == 0
    assert sorted(ids(db.dataloader(samples))) == list(range(1, ROWS + 1))


def test_stream_torch(db, samples):
    torch = pytest.importorskip("torch")
    loader = db.dataloader(samples).filter("label IS NOT NULL").columns(["embedding", "image", "label"]) \
        .batch_size(16).shuffle(True).to_torch()
    assert isinstance(loader, torch.utils.data.IterableDataset)
    batches = list(loader)
    assert sum(len(b["label"]) for b in batches) == ROWS - ROWS // 3
    assert set(batches[0]) == {"embedding", "image", "label"}
    assert batches[0]["embedding"].dtype == torch.float32
    b = next(iter(db.dataloader(samples).columns(["b"]).to_torch(device="cpu", pin_memory=True)))
    assert b["b"].dtype == torch.bfloat16 and b["b"][0].tolist() == [1.5, 2.0]


def test_to_cuda(db, samples):
    # The stream placed on a CUDA device from pinned and from pageable
    # host memory (frames through the socket): the same values as on the
    # CPU, every tensor on the device, fixed columns views of one copy of
    # the frame, ragged ones a tensor per row.
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine: the device placement is not exercised")
    cols = ["id", "embedding", "t", "b", "label", "r", "text"]
    cpu = list(db.dataloader(samples).columns(cols).batch_size(16).with_validity().to_torch())
    for pin in (True, False):
        gpu = list(db.dataloader(samples).columns(cols).batch_size(16).with_validity().to_torch(device="cuda", pin_memory=pin))
        assert len(cpu) == len(gpu)
        for c, g in zip(cpu, gpu):
            assert list(c) == list(g)
            for name in cols:
                if name == "text":
                    assert g[name] == c[name]
                elif name == "r":  # ragged: a tensor per row
                    assert all(x.device.type == "cuda" and torch.equal(x.cpu(), y) for x, y in zip(g[name], c[name]))
                else:
                    assert g[name].device.type == "cuda" and g[name].dtype == c[name].dtype
                    assert torch.equal(g[name].cpu(), c[name]), name
                    assert torch.equal(g[name + ".valid"].cpu(), c[name + ".valid"])


def test_curated_table(db, samples):
    # A curated copy made with CREATE TABLE ... AS streams as its source:
    # the same shapes and dtypes, the rows the query kept.
    torch = pytest.importorskip("torch")
    db.execute("DROP TABLE IF EXISTS curated")
    db.execute("CREATE TABLE curated AS SELECT id, embedding, t, b, label FROM samples "
               "WHERE label IN (0, 1) AND metadata->>'quality' = 'high'")
    db.execute("VACUUM curated")
    batches = list(db.dataloader("curated").batch_size(8).to_torch())
    want = [g for g in range(1, ROWS + 1) if g % 3 != 0 and g % 5 in (0, 1) and g % 2 == 0]
    assert sorted(int(i) for b in batches for i in b["id"]) == want
    b = batches[0]
    assert tuple(b["embedding"].shape[1:]) == (4,) and b["embedding"].dtype == torch.float32
    assert tuple(b["t"].shape[1:]) == (2, 2) and b["t"].dtype == torch.uint8
    assert b["b"].dtype == torch.bfloat16
    assert torch.equal(b["embedding"][:, 0], b["id"].float())


def test_stream_uuid_and_times(db):
    # uuid, date, timestamp and timestamptz columns stream as their text
    # forms, in order and through both shuffles.
    db.execute("DROP TABLE IF EXISTS st_types")
    db.execute("CREATE TABLE st_types (id int PRIMARY KEY, u uuid, d date, ts timestamp, at timestamptz)")
    db.execute("INSERT INTO st_types SELECT g, gen_random_uuid(), '2024-01-01', '2024-01-01 10:00:00', '2024-01-01 10:00:00+02' "
               "FROM generate_series(1, 300) g")
    db.execute("UPDATE st_types SET at = NULL WHERE id = 7")
    want = {r[0]: r[1:] for r in db.execute("SELECT id, u::text, d::text, ts::text, at::text FROM st_types")}
    assert want[1][1:] == ("2024-01-01", "2024-01-01 10:00:00", "2024-01-01 08:00:00+00")
    for shuffle in (False, True, "exact"):
        got = {}
        for b in db.dataloader("st_types").batch_size(64).shuffle(shuffle, seed=3):
            for k, i in enumerate(b["id"]):
                got[int(i)] = (b["u"][k], b["d"][k], b["ts"][k], b["at"][k])
        assert got == want, shuffle


def test_curated_query(db, samples):
    pytest.importorskip("torch")
    curated = db.dataloader("SELECT embedding, image, label FROM samples WHERE metadata->>'quality' = 'high' "
                            "AND label IN (0, 1, 2) ORDER BY RANDOM()").batch_size(8).to_torch()
    labels = [int(x) for b in curated for x in b["label"]]
    want = [g % 5 for g in range(1, ROWS + 1) if g % 2 == 0 and g % 3 != 0 and g % 5 in (0, 1, 2)]
    assert sorted(labels) == sorted(want)


def test_shuffle_seed_reproducible(db, samples):
    a = ids(db.dataloader(samples).batch_size(10).shuffle(True, seed=7))
    b = ids(db.dataloader(samples).batch_size(10).shuffle(True, seed=7))
    assert a == b and sorted(a) == list(range(1, ROWS + 1))
    c = ids(db.dataloader(samples).batch_size(10).shuffle("exact", seed=7))
    assert sorted(c) == list(range(1, ROWS + 1))


def test_shards_partition(db, samples):
    parts = [ids(db.dataloader(samples).batch_size(7).shuffle(True, seed=3).shard(r, 3)) for r in range(3)]
    everything = [i for p in parts for i in p]
    assert sorted(everything) == list(range(1, ROWS + 1))


def test_shards_equal(db):
    # A plain scan's shards hold the same number of rows to one row, and
    # with drop_last exactly: every rank of a DDP model takes as many steps.
    db.execute("DROP TABLE IF EXISTS eq")
    db.execute("CREATE TABLE eq (id int)")
    db.execute("INSERT INTO eq SELECT g FROM generate_series(1, 30000) g")
    db.execute("VACUUM eq")  # the rows into fragments, which are cut
    for world in (3, 7):
        parts = [ids(db.dataloader("eq").batch_size(1000).shuffle(True, seed=3).shard(r, world)) for r in range(world)]
        sizes = [len(p) for p in parts]
        assert max(sizes) - min(sizes) <= 1, sizes
        assert sorted(i for p in parts for i in p) == list(range(1, 30001))
    # 30,000 rows in 7 shards: 4,285 or 4,286 each (one or two batches of
    # 2,143), but 4,285 with drop_last (the last 5 of the order left out):
    # one batch each.
    steps = [len(list(db.dataloader("eq").batch_size(2143).shuffle(True, seed=3).shard(r, 7).drop_last()))
             for r in range(7)]
    assert steps == [1] * 7, steps


def test_shards_of_one_snapshot(db):
    # Shards reading one exported snapshot partition the rows it saw, while
    # the table changes between their statements (rows come, the buffered
    # ones are flushed and compacted: the row groups of later snapshots
    # differ).
    import psycopg
    db.execute("DROP TABLE IF EXISTS snap_t")
    db.execute("CREATE TABLE snap_t (id int)")
    db.execute("INSERT INTO snap_t SELECT g FROM generate_series(1, 30000) g")
    db.execute("VACUUM snap_t")
    db.execute("INSERT INTO snap_t SELECT g FROM generate_series(30001, 30050) g")  # buffered
    with db.export_snapshot() as snap:
        parts = []
        for r in range(3):
            db.execute("INSERT INTO snap_t VALUES (%d)" % (40000 + r))
            db.execute("VACUUM snap_t")
            parts.append(ids(db.dataloader("snap_t").batch_size(1000).shuffle(True, seed=5).shard(r, 3).snapshot(snap)))
        assert sorted(i for p in parts for i in p) == list(range(1, 30051))
    with pytest.raises(psycopg.Error) as e:  # the exporter has ended
        list(db.dataloader("snap_t").snapshot(snap))
    assert e.value.sqlstate == "22023"


def _write_before_stream(worker_id):
    # A DataLoader worker_init_fn: worker k > 0 waits k * 1.5 s (worker 0
    # has started its statement by then), then inserts a row and VACUUMs
    # (flushing the buffered rows into a fragment) before its own
    # statement: the latest snapshot's row groups differ from worker 0's.
    if worker_id == 0:
        return
    import psycopg
    time.sleep(1.5 * worker_id)
    with psycopg.connect(DSN, autocommit=True) as c:
        c.execute("INSERT INTO epoch_w VALUES (%d)" % (50000 + worker_id))
        c.execute("VACUUM epoch_w")


def test_workers_share_epoch_snapshot(db):
    # DataLoader workers name one EPOCH by themselves: they partition the
    # rows of the snapshot the first of them read, while the table is
    # written to and flushed between their statements.
    torch = pytest.importorskip("torch")
    db.execute("DROP TABLE IF EXISTS epoch_w")
    db.execute("CREATE TABLE epoch_w (id int)")
    db.execute("INSERT INTO epoch_w SELECT g FROM generate_series(1, 30000) g")
    db.execute("VACUUM epoch_w")
    db.execute("INSERT INTO epoch_w SELECT g FROM generate_series(30001, 30050) g")  # buffered
    loader = db.dataloader("epoch_w").batch_size(1000).shuffle(True).to_torch()
    dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=3, worker_init_fn=_write_before_stream)
    assert sorted(ids(dl)) == list(range(1, 30051))
    # The next epoch reads a new snapshot, with the rows written meanwhile.
    dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2)
    assert sorted(ids(dl)) == list(range(1, 30051)) + [50001, 50002]


def test_ranks_share_epoch_with_set_epoch(db):
    # Ranks (here: three loaders in turn) that call set_epoch(e) read one
    # snapshot per epoch, whatever is written between their statements,
    # and each epoch has its own order.
    db.execute("DROP TABLE IF EXISTS epoch_r")
    db.execute("CREATE TABLE epoch_r (id int)")
    db.execute("INSERT INTO epoch_r SELECT g FROM generate_series(1, 30000) g")
    db.execute("VACUUM epoch_r")
    db.execute("INSERT INTO epoch_r SELECT g FROM generate_series(30001, 30050) g")  # buffered
    ranks = [db.dataloader("epoch_r").batch_size(1000).shuffle(True, seed=9).shard(r, 3) for r in range(3)]
    want = list(range(1, 30051))
    orders = []
    for epoch in range(2):
        parts = []
        for r, loader in enumerate(ranks):
            loader.set_epoch(epoch)
            if r > 0:
                db.execute("INSERT INTO epoch_r VALUES (%d)" % (40000 + 10 * epoch + r))
                db.execute("VACUUM epoch_r")
            parts.append(ids(loader))
        assert sorted(i for p in parts for i in p) == want
        orders.append(parts[0])
        want = sorted(want + [40000 + 10 * epoch + r for r in (1, 2)])
    assert orders[0] != orders[1]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_ddp_ranks(db, context):
    # Two ranks under torch.distributed, two DataLoader workers each, that
    # call set_epoch: every epoch, the four shards hold every row of the
    # table as the epoch began exactly once, though (with forked workers,
    # which start at once) rank 1 writes and flushes the table while rank 0
    # streams; each epoch has its own order. Spawned workers are not in
    # torch.distributed's group: they learn the ranks from the loader.
    import json
    import socket
    import subprocess
    pytest.importorskip("torch")
    table = "ddp_" + context
    write = context == "fork"
    db.execute("DROP TABLE IF EXISTS " + table)
    db.execute("CREATE TABLE %s (id int)" % table)
    db.execute("INSERT INTO %s SELECT g FROM generate_series(1, 30000) g" % table)
    db.execute("VACUUM " + table)
    db.execute("INSERT INTO %s SELECT g FROM generate_series(30001, 30050) g" % table)  # buffered
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(here)] + sys.path))
    procs = [subprocess.Popen([sys.executable, os.path.join(here, "ddp_rank.py"), DSN, table, str(r), "2", str(port), "2",
                               context, "1" if write else "0"], stdout=subprocess.PIPE, env=env) for r in range(2)]
    outs = []
    for p in procs:
        stdout, _ = p.communicate(timeout=300)
        assert p.returncode == 0
        outs.append(json.loads(stdout.decode().strip().splitlines()[-1]))
    want = list(range(1, 30051))
    for epoch in range(2):
        parts = [outs[r][epoch] for r in range(2)]
        assert parts[0] and parts[1]
        assert sorted(parts[0] + parts[1]) == want, "epoch %d" % epoch
        if write:
            want = sorted(want + [90000 + epoch])
    assert outs[0][0] != outs[0][1]


def test_persistent_workers_reshuffle(db, samples):
    # Persistent workers keep torch's base seed across epochs; each epoch
    # still has a new order, and every epoch is a partition.
    torch = pytest.importorskip("torch")
    loader = db.dataloader(samples).columns(["id"]).batch_size(8).shuffle(True).to_torch()
    dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2, persistent_workers=True)
    epochs = [ids(dl) for _ in range(3)]
    for got in epochs:
        assert sorted(got) == list(range(1, ROWS + 1))
    assert epochs[0] != epochs[1] and epochs[1] != epochs[2]


def test_persistent_workers_set_epoch(db, samples):
    # set_epoch reaches persistent workers: epoch e's stream is the one
    # fresh workers read after set_epoch(e) (seed + e), not epoch 0's.
    torch = pytest.importorskip("torch")

    def loader():
        return db.dataloader(samples).columns(["id"]).batch_size(8).shuffle(True, seed=11).to_torch()
    persistent = loader()
    dl = torch.utils.data.DataLoader(persistent, batch_size=None, num_workers=2, persistent_workers=True)
    got = []
    for epoch in range(3):
        if epoch:  # the first call comes after the workers have started
            persistent.set_epoch(epoch)
        got.append(ids(dl))
    for epoch in range(3):
        fresh = loader().set_epoch(epoch)
        assert got[epoch] == ids(torch.utils.data.DataLoader(fresh, batch_size=None, num_workers=2))
        assert sorted(got[epoch]) == list(range(1, ROWS + 1))
    assert got[0] != got[1] and got[1] != got[2]


def test_map_dataset_snapshot(db):
    # A map-style dataset reading an exported snapshot: its length, its
    # positions and every DataLoader worker's rows are the snapshot's,
    # whatever is written meanwhile.
    torch = pytest.importorskip("torch")
    import psycopg
    db.execute("DROP TABLE IF EXISTS snap_ds")
    db.execute("CREATE TABLE snap_ds (id int PRIMARY KEY, v int)")
    db.execute("INSERT INTO snap_ds SELECT g, g * 2 FROM generate_series(1, 500) g")
    with db.export_snapshot() as snap:
        db.execute("DELETE FROM snap_ds WHERE id <= 100")
        db.execute("INSERT INTO snap_ds SELECT g, g * 2 FROM generate_series(501, 600) g")
        ds = db.open_table("snap_ds").pytorch(columns=["id", "v"], block_size=32, snapshot=snap)
        assert len(ds) == 500 and int(ds[0]["id"]) == 1 and int(ds[499]["v"]) == 1000
        loader = torch.utils.data.DataLoader(ds, batch_size=50, shuffle=True, num_workers=2)
        assert sorted(i for b in loader for i in b["id"].tolist()) == list(range(1, 501))
    assert len(db.open_table("snap_ds").pytorch(columns=["id"])) == 500  # 101..600
    with pytest.raises(psycopg.Error) as e:  # the exporter has ended
        db.open_table("snap_ds").pytorch(snapshot=snap)
    assert e.value.sqlstate == "22023"


def test_map_dataset_own_snapshot(db):
    # snapshot=True: the dataset exports the snapshot it was made in and
    # holds it; its length, positions and every worker's rows are that
    # snapshot's, whatever is written meanwhile.
    torch = pytest.importorskip("torch")
    db.execute("DROP TABLE IF EXISTS own_ds")
    db.execute("CREATE TABLE own_ds (id int PRIMARY KEY, v int)")
    db.execute("INSERT INTO own_ds SELECT g, g * 3 FROM generate_series(1, 400) g")
    ds = db.open_table("own_ds").pytorch(columns=["id", "v"], block_size=32, snapshot=True)
    db.execute("DELETE FROM own_ds WHERE id % 2 = 0")
    db.execute("INSERT INTO own_ds SELECT g, g * 3 FROM generate_series(401, 500) g")
    db.execute("VACUUM own_ds")
    assert len(ds) == 400 and int(ds[1]["id"]) == 2 and int(ds[399]["v"]) == 1200
    loader = torch.utils.data.DataLoader(ds, batch_size=40, shuffle=True, num_workers=2)
    assert sorted(i for b in loader for i in b["id"].tolist()) == list(range(1, 401))
    fresh = db.open_table("own_ds").pytorch(columns=["id"])
    assert len(fresh) == 300


def test_drop_last(db, samples):
    sizes = [len(b["id"]) for b in db.dataloader(samples).batch_size(32).drop_last()]
    assert sizes == [32, 32, 32]


def test_start_batch(db, samples):
    full = ids(db.dataloader(samples).batch_size(10).shuffle(True, seed=5))
    rest = ids(db.dataloader(samples).batch_size(10).shuffle(True, seed=5).start_batch(3))
    assert rest == full[30:]


def test_workers_split(db, samples):
    torch = pytest.importorskip("torch")
    loader = db.dataloader(samples).columns(["id"]).batch_size(8).to_torch()
    dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2)
    got = [int(i) for b in dl for i in b["id"]]
    assert sorted(got) == list(range(1, ROWS + 1))


def test_workers_agree_on_random_order(db, samples):
    # A query ordered by random() that the server keeps as a sort (a
    # join): the workers' statements get the epoch's shared seed, so
    # their shards are disjoint; the next epoch draws a new order.
    torch = pytest.importorskip("torch")
    q = ("SELECT a.id FROM %s a JOIN %s b ON a.id = b.id ORDER BY random()" % (samples, samples))
    dl = torch.utils.data.DataLoader(db.dataloader(q).batch_size(8).to_torch(), batch_size=None, num_workers=2)
    epochs = [[int(i) for b in dl for i in b["id"]] for _ in range(2)]
    for got in epochs:
        assert sorted(got) == list(range(1, ROWS + 1))
    assert epochs[0] != epochs[1]


def test_server_error(db):
    import psycopg
    with pytest.raises(psycopg.Error) as e:
        list(db.dataloader("no_such_table"))
    assert e.value.sqlstate == "42P01"


def test_map_dataset(db, samples):
    torch = pytest.importorskip("torch")
    ds = db.open_table(samples).pytorch(columns=["id", "embedding", "label", "t"], block_size=16)
    assert len(ds) == ROWS
    row = ds[20]
    assert int(row["id"]) == 21 and row["embedding"].tolist() == [21, 1, 2, 3]
    assert int(ds[-1]["id"]) == ROWS
    with pytest.raises(IndexError):
        ds[ROWS]
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, num_workers=2)
    seen = []
    for b in loader:
        assert b["embedding"].shape[1:] == (4,) and b["t"].shape[1:] == (2, 2)
        seen += b["id"].tolist()
    assert sorted(seen) == list(range(1, ROWS + 1))


def test_issue_example(db):
    # The issue's code as written, with only the connection string changed.
    torch = pytest.importorskip("torch")
    db.execute("CREATE TABLE IF NOT EXISTS training_samples (id SERIAL PRIMARY KEY, text TEXT, embedding VECTOR(1536), image BLOB, label INT, metadata JSONB)")
    vals = ",".join("('t%d', '[%s]', '\\x0102', %d, '%s')" % (
        g, ",".join([str(g)] * 1536), g % 4, '{"quality": "high"}' if g % 2 == 0 else "{}") for g in range(1, 201))
    db.execute("INSERT INTO training_samples (text, embedding, image, label, metadata) VALUES " + vals)
    train_loader = (db.dataloader("training_samples").filter("label IS NOT NULL")
                    .columns(["embedding", "image", "label"]).batch_size(64).shuffle(True).to_torch())
    batches = list(train_loader)
    assert [len(b["label"]) for b in batches] == [64, 64, 64, 8]
    assert tuple(batches[0]["embedding"].shape) == (64, 1536) and batches[0]["image"][0] == b"\x01\x02"
    curated = db.dataloader("SELECT embedding, image, label FROM training_samples WHERE metadata->>'quality' = 'high' AND label IN (0, 1, 2) ORDER BY RANDOM()").batch_size(64).to_torch()
    assert sum(len(b["label"]) for b in curated) == 100
    ds = db.open_table("training_samples")
    loader = torch.utils.data.DataLoader(ds.pytorch(), batch_size=64, shuffle=True, num_workers=8)
    seen = []
    for b in loader:
        assert tuple(b["embedding"].shape[1:]) == (1536,)
        assert torch.equal(b["embedding"][:, 0], b["id"].float())
        seen += b["id"].tolist()
    assert sorted(seen) == list(range(1, 201))


def test_spawned_workers(db, samples):
    torch = pytest.importorskip("torch")
    loader = db.dataloader(samples).columns(["id"]).batch_size(8).to_torch()
    dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2, multiprocessing_context="spawn")
    assert sorted(int(i) for b in dl for i in b["id"]) == list(range(1, ROWS + 1))
    ds = db.open_table(samples).pytorch(columns=["id"], block_size=32)
    dl = torch.utils.data.DataLoader(ds, batch_size=10, num_workers=2, multiprocessing_context="spawn")
    assert sorted(i for b in dl for i in b["id"].tolist()) == list(range(1, ROWS + 1))


def test_map_dataset_by_key(db, samples):
    # With a one-column primary key, a read that does not follow the one
    # before fetches its row by key, and blocks are key ranges: every
    # position gives its own row in key order, in any access order.
    ds = db.open_table(samples).pytorch(columns=["id", "embedding"], block_size=16)
    order = list(range(ROWS))
    random.Random(4).shuffle(order)
    for i in order[:40] + list(range(ROWS)):
        row = ds[i]
        assert int(row["id"]) == i + 1 and row["embedding"].tolist()[0] == i + 1
    assert set(ds[5]) == {"id", "embedding"}
    only = db.open_table(samples).pytorch(columns=["embedding"], block_size=16)
    assert set(only[7]) == {"embedding"} and only[7]["embedding"].tolist()[0] == 8
    assert set(only[8]) == {"embedding"} and only[9]["embedding"].tolist()[0] == 10
    # A batch at once (torch 2's DataLoader asks for it): one query for
    # the rows not cached, in the order asked.
    batch = db.open_table(samples).pytorch(columns=["id"], block_size=16).__getitems__([5, 3, 40, 3, -1])
    assert [int(r["id"]) for r in batch] == [6, 4, 41, 4, ROWS]
    # A row deleted since the dataset's process first read it: its
    # position raises, the others stay where they were.
    fresh = db.open_table(samples).pytorch(columns=["id"], block_size=16)
    assert int(fresh[0]["id"]) == 1
    db.execute("DELETE FROM samples WHERE id = 31")
    with pytest.raises(IndexError):
        fresh[30]
    with pytest.raises(IndexError):
        fresh.__getitems__([2, 30])
    assert int(fresh[31]["id"]) == 32 and int(fresh[29]["id"]) == 30


def test_map_dataset_without_key(db):
    db.execute("DROP TABLE IF EXISTS nokey")
    db.execute("CREATE TABLE nokey (v int, w text)")
    db.execute("INSERT INTO nokey SELECT g, 'w' || g FROM generate_series(1, 50) g")
    # Without a key, rows are ordered by the system column _rowid, which
    # addresses them as a key does; the rows do not hold it.
    ds = db.open_table("nokey").pytorch(block_size=8)
    assert ds.order_by == ["_rowid"] and len(ds) == 50
    assert sorted(int(ds[i]["v"]) for i in [49, 3, 17, 0]) == [1, 4, 18, 50]
    assert [int(ds[i]["v"]) for i in range(50)] == list(range(1, 51))
    assert set(ds[7]) == {"v", "w"} and ds[7]["w"] == "w8"
    only = db.open_table("nokey").pytorch(columns=["w"], block_size=8)
    assert set(only[9]) == {"w"} and only[9]["w"] == "w10" and only[10]["w"] == "w11"
    # A batch at once is one query (`_rowid IN (...)`), in the order asked.
    batch = db.open_table("nokey").pytorch(block_size=8)
    batch._key_list()
    calls = []
    fetch = batch._fetch
    batch._fetch = lambda q, *a, **k: calls.append(q) or fetch(q, *a, **k)
    assert [int(r["v"]) for r in batch.__getitems__([40, 2, 2, -1, 17])] == [41, 3, 3, 50, 18]
    assert len(calls) == 1 and "_rowid IN (" in calls[0]
    # A read that does not follow the one before fetches its row alone
    # (`_rowid = id`): its block is not read.
    ds = db.open_table("nokey").pytorch(block_size=8)
    order = list(range(50))
    random.Random(4).shuffle(order)
    assert [int(ds[i]["v"]) for i in order] == [i + 1 for i in order]
    assert int(ds[33]["v"]) == 34 and 33 // 8 not in ds._cache
    assert int(ds[34]["v"]) == 35 and 34 // 8 in ds._cache
    # An updated row has a new id: its old position raises, the others stay.
    db.execute("UPDATE nokey SET w = 'changed' WHERE v = 20")
    with pytest.raises(IndexError):
        ds[19]
    with pytest.raises(IndexError):
        ds.__getitems__([1, 19])
    assert int(ds[20]["v"]) == 21 and int(ds[18]["v"]) == 19
    db.execute("UPDATE nokey SET w = 'w20' WHERE v = 20")

    # order_by=(): storage order, a block being LIMIT block_size OFFSET
    # block*block_size and a read that does not follow the one before
    # its row alone (LIMIT 1 OFFSET i). The updated row is now last.
    ds = db.open_table("nokey").pytorch(block_size=8, order_by=())
    want = [v for v in range(1, 51) if v != 20] + [20]
    assert [int(ds[i]["v"]) for i in range(50)] == want
    ds = db.open_table("nokey").pytorch(block_size=8, order_by=())
    assert [int(ds[i]["v"]) for i in order] == [want[i] for i in order]
    ds = db.open_table("nokey").pytorch(block_size=8, order_by=())
    assert int(ds[33]["v"]) == 35 and 33 // 8 not in ds._cache
    assert int(ds[34]["v"]) == 36 and 34 // 8 in ds._cache


def test_features_from_columns(db):
    # ARRAY[...] of scalar columns: one fixed-shape tensor per row, a
    # [batch, n] tensor per batch.
    torch = pytest.importorskip("torch")
    db.execute("DROP TABLE IF EXISTS tab")
    db.execute("CREATE TABLE tab (id int, age int, income float8, score float4, label int)")
    db.execute("INSERT INTO tab SELECT g, 20 + g % 50, g * 1.5, g / 4.0, g % 3 FROM generate_series(1, 100) g")
    q = "SELECT ARRAY[age, income, score] AS x, ARRAY[ARRAY[age, 1], ARRAY[2, id]] AS m, label FROM tab ORDER BY id"
    batches = list(db.dataloader(q).batch_size(32).to_torch())
    x = torch.cat([b["x"] for b in batches])
    m = torch.cat([b["m"] for b in batches])
    assert x.dtype == torch.float64 and tuple(x.shape) == (100, 3)
    assert tuple(m.shape) == (100, 2, 2) and m.dtype == torch.int32
    ids = torch.arange(1, 101, dtype=torch.float64)
    assert torch.equal(x[:, 0], 20 + ids % 50) and torch.equal(x[:, 1], ids * 1.5) and torch.equal(x[:, 2], ids / 4)
    assert torch.equal(m[:, 1, 1], torch.arange(1, 101, dtype=torch.int32)) and int(m[:, 1, 0].unique()) == 2
