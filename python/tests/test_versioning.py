"""Version control from Python (docs/versioning.md): Table.commit,
checkout, log, diff, merge, tag, reset, branches and tags; the loader's
.version(ref) and commit_id; open_table(name, version=ref). Against the
server DEEPLAKED_DSN names (test/pyclient starts one)."""

import os

import numpy as np
import psycopg
import pytest

import deeplaked

DSN = os.environ.get("DEEPLAKED_DSN")
pytestmark = pytest.mark.skipif(not DSN, reason="DEEPLAKED_DSN not set")


@pytest.fixture()
def db():
    d = deeplaked.connect(DSN)
    d.execute("DROP TABLE IF EXISTS vt")
    d.execute("CREATE TABLE vt (id int PRIMARY KEY, label int, x float32[2])")
    d.execute("INSERT INTO vt SELECT g, g % 3, ARRAY[g, g]::float32[2] FROM generate_series(1, 100) g")
    yield d
    d.execute("RESET deeplake.branch")
    d.execute("DROP TABLE IF EXISTS vt")
    d.close()


def ids(loader):
    return sorted(int(i) for b in loader for i in b["id"])


def test_commit_checkout_merge(db):
    t = db.open_table("vt")
    first = t.commit("a hundred rows")
    assert len(first) == 12
    t.tag("v1")
    assert t.tags == ["v1"]

    t.checkout("curated", create=True)
    assert t.branches == ["curated", "main"]
    assert t.branch == "curated"
    # checkout made it the session's branch of vt: plain SQL writes it.
    db.execute("DELETE FROM vt WHERE label = 0")
    db.execute("UPDATE vt SET label = 7 WHERE id = 1")
    assert len(t) == 67
    second = t.commit("drop label 0")
    log = t.log()
    assert [c["message"] for c in log] == ["drop label 0", "a hundred rows"]
    assert log[0]["parent"] == first and log[0]["branch"] == "curated" and log[0]["deleted"] == 34

    changes = t.diff("v1")
    kinds = sorted(k for k, _ in changes)
    assert kinds.count("deleted") == 33 and kinds.count("updated") == 1
    assert [r["id"] for k, r in changes if k == "updated"] == [1]

    # main is untouched; merging the branch into it applies the change.
    main = db.open_table("vt", version="main")
    assert len(main) == 100
    merge_id = main.merge("curated")
    assert len(main) == 67
    assert main.log()[0]["id"] == merge_id and main.log()[0]["merged"] == second

    # A version is read-only and reads what it named.
    old = db.open_table("vt", version=first)
    assert len(old) == 100
    with pytest.raises(psycopg.Error) as e:
        db.execute('INSERT INTO "vt@%s" VALUES (1000, 1, ARRAY[1,1])' % first)
    assert e.value.sqlstate == "25006"

    # reset moves main back, as a new commit.
    main.reset("v1")
    assert len(main) == 100 and len(main.log()) == 4


def test_merge_conflict(db):
    t = db.open_table("vt")
    t.commit("base")
    t.checkout("a", create=True)
    db.execute("UPDATE vt SET label = 10 WHERE id = 5")
    main = db.open_table("vt", version="main")
    db.execute('UPDATE "vt@main" SET label = 20 WHERE id = 5')
    with pytest.raises(psycopg.Error) as e:
        main.merge("a")
    assert e.value.sqlstate == "40001" and "(id)=(5)" in e.value.diag.message_detail
    main.merge("a", strategy="theirs")
    assert db.execute('SELECT label FROM "vt@main" WHERE id = 5')[0][0] == 10


def test_loader_pins_a_version(db):
    loader = db.dataloader("vt").batch_size(32)
    assert loader.commit_id is None
    assert ids(loader) == list(range(1, 101))
    pinned = loader.commit_id
    assert pinned is not None and len(pinned) == 12
    assert loader.source.branch == ""
    # The table moves on; the commit reads what the stream read.
    db.execute("DELETE FROM vt WHERE id > 50")
    assert ids(db.dataloader("vt")) == list(range(1, 51))
    again = db.dataloader("vt").version(pinned)
    assert ids(again) == list(range(1, 101))
    assert again.commit_id == pinned
    # Two streams of one version name one commit.
    l1, l2 = db.dataloader("vt"), db.dataloader("vt")
    ids(l1), ids(l2)
    assert l1.commit_id == l2.commit_id != pinned
    # A branch, by name, through the loader and open_table.
    t = db.open_table("vt")
    t.checkout("b", create=True)
    db.execute("DELETE FROM vt WHERE id <= 10")
    db.execute("RESET deeplake.branch")
    b = db.dataloader("vt").version("b").to_torch()
    got = ids(b)
    assert got == list(range(11, 51)) and b.source.branch == "b"
    ds = db.open_table("vt", version=pinned).pytorch()
    assert len(ds) == 100
    x = ds[0]["x"]
    assert np.asarray(x).tolist() == [1.0, 1.0]
