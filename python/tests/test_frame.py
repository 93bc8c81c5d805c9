import struct

import numpy as np
import pytest

import deeplaked
from deeplaked.frame import BYTES, FIXED, RAGGED, parse_frame
from framebuild import build_frame, column

RAGGED_DIM = 0xFFFFFFFF


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def sample():
    return build_frame(5, 3, [
        column("embedding", FIXED, 9, [2], f32(1, 2, 3, 4, 5, 6)),
        column("image", FIXED, 3, [2, 2], bytes([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 255])),
        column("label", FIXED, 5, [], struct.pack("<3i", 7, 0, -9), validity=bytes([0b101])),
        column("id", FIXED, 6, [], struct.pack("<3q", 1, 2, 1 << 40)),
        column("half", FIXED, 7, [], np.array([1.5, -2, 0], dtype="<f2").tobytes()),
        column("bf", FIXED, 8, [], np.array([0x3FC0, 0, 0x4000], dtype="<u2").tobytes()),
        column("flag", FIXED, 1, [], bytes([1, 0, 1])),
        column("r", RAGGED, 9, [RAGGED_DIM], f32(1.5, 1, 2, 3), offsets=[0, 1, 1, 4], shapes=[1, 0, 3]),
        column("m", RAGGED, 5, [RAGGED_DIM, 2], struct.pack("<6i", 1, 2, 3, 4, 5, 6), offsets=[0, 2, 6, 6], shapes=[1, 2, 2, 2, 0, 2]),
        column("text", BYTES, 1, [], "hellojé".encode(), validity=bytes([0b011]), offsets=[0, 5, 8, 8]),
        column("blob", BYTES, 4, [], b"\xde\xad\x00", offsets=[0, 2, 2, 3]),
    ])


def test_parse_all_kinds():
    fr = parse_frame(sample())
    assert fr.batch_index == 5 and fr.rows == 3
    d = fr.to_numpy()
    assert d["embedding"].shape == (3, 2) and d["embedding"].dtype == np.float32
    np.testing.assert_array_equal(d["embedding"], [[1, 2], [3, 4], [5, 6]])
    assert d["image"].shape == (3, 2, 2) and d["image"][2, 1, 1] == 255
    np.testing.assert_array_equal(d["label"], [7, 0, -9])
    np.testing.assert_array_equal(fr.columns["label"].valid(), [True, False, True])
    np.testing.assert_array_equal(fr.columns["embedding"].valid(), [True, True, True])
    assert d["id"][2] == 1 << 40 and d["id"].dtype == np.int64
    np.testing.assert_array_equal(d["half"], [1.5, -2, 0])
    assert d["bf"].dtype == np.uint16
    np.testing.assert_array_equal(d["flag"], [True, False, True])
    assert [list(x) for x in d["r"]] == [[1.5], [], [1, 2, 3]]
    assert [x.shape for x in d["m"]] == [(1, 2), (2, 2), (0, 2)]
    assert d["text"] == ["hello", "jé", None]
    assert d["blob"] == [b"\xde\xad", b"", b"\x00"]


def test_buffers_aligned():
    for shift in range(8):
        payload = memoryview(bytearray(shift) + bytearray(sample()))[shift:]
        fr = parse_frame(payload)
        for c in fr.columns.values():
            if len(c.values):
                assert c.values.ctypes.data % 64 == 0, c.name


@pytest.mark.parametrize("mutate,message", [
    (lambda b: b[:10], "shorter than the header"),
    (lambda b: b"PGCO" + b[4:], "bad frame magic"),
    (lambda b: b[:4] + struct.pack("<H", 2) + b[6:], "frame version 2"),
    (lambda b: b[:len(b) - 64], "outside"),
])
def test_errors(mutate, message):
    with pytest.raises(deeplaked.FrameError, match=message):
        parse_frame(mutate(sample()))


def test_torch_conversion():
    torch = pytest.importorskip("torch")
    from deeplaked.loader import DataLoader

    class FakeDB:
        pass

    loader = DataLoader(FakeDB(), "t").to_torch()
    fr = parse_frame(sample())
    out = {n: loader._convert(c, c.to_numpy()) for n, c in fr.columns.items()}
    assert out["embedding"].dtype == torch.float32 and tuple(out["embedding"].shape) == (3, 2)
    assert out["bf"].dtype == torch.bfloat16 and out["bf"][0].item() == 1.5
    assert out["label"].tolist() == [7, 0, -9]
    assert isinstance(out["r"], list) and out["r"][2].tolist() == [1, 2, 3]
    assert out["text"] == ["hello", "jé", None]


def test_device_views_of_one_copy():
    # to_torch(device="cuda") copies a frame once and views its fixed
    # columns in the copy: the views' dtypes, shapes and values equal the
    # per-column conversion. The view arithmetic is the same on any
    # device, so a CPU copy checks it here; test_server.py's and
    # test_sharedmem.py's CUDA tests check the copies on a GPU.
    torch = pytest.importorskip("torch")
    from deeplaked.device import Placer
    from deeplaked.loader import DataLoader

    loader = DataLoader(None, "t").to_torch()
    placer = Placer(torch.device("cpu"), False)
    fr = parse_frame(sample())
    dev, held = placer.frame(fr)
    assert held is None and dev.data_ptr() != fr.buffer.ctypes.data
    fixed = [n for n, c in fr.columns.items() if c.kind == FIXED]
    assert len(fixed) == 7
    for name in fixed:
        col = fr.columns[name]
        got, want = placer.column(dev, fr, col), loader._convert(col, col.to_numpy())
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert torch.equal(got, want), name
    # Values outside the frame's buffer are not viewed.
    col = fr.columns["label"]
    saved, col.values = col.values, col.values.copy()
    assert placer.column(dev, fr, col) is None
    col.values = saved
    # The batch through the placer equals the one without it.
    a, b = loader._batch(fr, placer), loader._batch(fr)
    assert list(a) == list(b)
    for k in a:
        if isinstance(a[k], torch.Tensor):
            assert torch.equal(a[k], b[k]), k
    assert [x.tolist() for x in a["r"]] == [x.tolist() for x in b["r"]] and a["text"] == b["text"]
    placer.close()

    # Images beside a label: the images are a view of the copy, the label
    # a copy of its part (keeping it keeps 4 bytes a row, not the frame);
    # a frame mostly of text and ragged values goes column by column.
    from deeplaked.device import whole_frame
    rows = 8
    imgs = np.arange(rows * 3 * 64 * 64, dtype=np.int64).astype(np.uint8)
    fr = parse_frame(build_frame(0, rows, [
        column("image", FIXED, 3, [3, 64, 64], imgs.tobytes()),
        column("label", FIXED, 5, [], struct.pack("<%di" % rows, *range(rows))),
    ]))
    assert whole_frame(fr) and not whole_frame(parse_frame(sample()))
    dev, _ = placer.frame(fr)
    image, label = placer.column(dev, fr, fr.columns["image"]), placer.column(dev, fr, fr.columns["label"])
    assert dev.data_ptr() <= image.data_ptr() < dev.data_ptr() + dev.numel()
    assert not dev.data_ptr() <= label.data_ptr() < dev.data_ptr() + dev.numel()
    assert torch.equal(image, torch.from_numpy(imgs.reshape(rows, 3, 64, 64)))
    assert label.tolist() == list(range(rows)) and label.dtype == torch.int32


def test_cuda_in_a_bad_fork_is_clear(monkeypatch):
    # A process forked after its parent started CUDA (a DataLoader worker)
    # cannot use CUDA: the loader says so, and what to do, before it
    # connects.
    torch = pytest.importorskip("torch")
    from deeplaked.loader import DataLoader
    loader = DataLoader(None, "t").to_torch()
    loader._device = torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: True, raising=False)
    with pytest.raises(RuntimeError, match="forked after CUDA started.*multiprocessing_context='spawn'"):
        next(iter(loader))


def test_cuda_unavailable_is_clear():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    from deeplaked.loader import DataLoader
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        DataLoader(None, "t").to_torch(device="cuda", pin_memory=True)
    DataLoader(None, "t").to_torch(device="cpu", pin_memory=True)


def test_sql_building():
    from deeplaked.loader import DataLoader
    l = DataLoader(None, "training_samples").filter("label IS NOT NULL").columns(["embedding", "Image", "label"])
    assert l.query() == 'SELECT embedding, "Image", label FROM training_samples WHERE (label IS NOT NULL)'
    l = l.batch_size(64).shuffle(True, seed=7).shard(1, 4).drop_last()
    assert l.sql() == ('COPY (SELECT embedding, "Image", label FROM training_samples WHERE (label IS NOT NULL)) '
                       "TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 64, SHUFFLE true, SEED 7, SHARD '1/4', DROP_LAST true)")
    assert DataLoader(None, "samples").sql() == "COPY samples TO STDOUT WITH (FORMAT tensor)"
    q = DataLoader(None, "SELECT a FROM t ORDER BY RANDOM()").batch_size(8)
    assert q.sql() == "COPY (SELECT a FROM t ORDER BY RANDOM()) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 8)"
    assert q.filter("a > 1").query() == "SELECT * FROM (SELECT a FROM t ORDER BY RANDOM()) AS q WHERE (a > 1)"


def test_set_epoch_sql():
    # set_epoch (in place): the seed is seed + epoch, and a sharded
    # statement names an EPOCH key that every rank's loader computes alike
    # (and that differs by epoch).
    from deeplaked.loader import DataLoader, copy_sql
    ranks = [DataLoader(None, "t").batch_size(8).shuffle(True, seed=7).shard(r, 2) for r in range(2)]
    assert "EPOCH" not in ranks[0].sql()  # ranks without set_epoch share no key
    assert ranks[0].set_epoch(3) is ranks[0]
    ranks[1].set_epoch(3)
    sqls = [l.sql() for l in ranks]
    assert "SEED 10, SHARD '0/2'" in sqls[0] and "SEED 10, SHARD '1/2'" in sqls[1]
    keys = [s[s.index("EPOCH '"):] for s in sqls]
    assert keys[0] == keys[1] and keys[0].startswith("EPOCH 'deeplaked:")
    ranks[0].set_epoch(4)
    assert "SEED 11" in ranks[0].sql() and keys[0] not in ranks[0].sql()
    # Unsharded: no key; with no seed the epoch seeds the shuffle.
    one = DataLoader(None, "t").shuffle(True).set_epoch(2)
    assert one.sql() == "COPY t TO STDOUT WITH (FORMAT tensor, SHUFFLE true, SEED 2)"
    # Ranks without a seed shuffle with the epoch (0 before set_epoch), not
    # with a seed of their own.
    assert "SEED 0, SHARD '1/2'" in DataLoader(None, "t").shuffle(True).shard(1, 2).sql()
    assert copy_sql("t", epoch="it's") == "COPY t TO STDOUT WITH (FORMAT tensor, EPOCH 'it''s')"
    with pytest.raises(ValueError):
        one.set_epoch(-1)


def test_layout_kept_only_for_its_header():
    # Frames of fixed-width columns reuse the checked layout of an earlier
    # frame with the same header but for the batch index: each must still
    # read as its own header says.
    from deeplaked import frame as fr

    def fixed(index, rows, dims=(2,), name="a", validity=None, code=5):
        n = rows * int(np.prod(dims))
        values = np.arange(index * 1000, index * 1000 + n, dtype="<i4").astype(fr.DTYPES[code]).tobytes()
        return build_frame(index, rows, [column(name, FIXED, code, list(dims), values, validity=validity),
                                         column("y", FIXED, 3, [], bytes(range(index, index + rows)))])

    frames = [fixed(0, 3), fixed(1, 3), fixed(2, 3, dims=(1, 2)), fixed(3, 2), fixed(4, 3, name="b"),
              fixed(5, 3, validity=bytes([0b110])), fixed(6, 3, code=9), fixed(7, 3), fixed(8, 3, dims=(3,))]
    fr._layouts.clear()
    cached = [fr.parse_aligned(fr.aligned_copy(b)) for b in frames]
    assert len(fr._layouts) == 7  # frames 0, 1 and 7 share one
    for b, got in zip(frames, cached):
        fr._layouts.clear()
        want = fr.parse_aligned(fr.aligned_copy(b))
        assert got.batch_index == want.batch_index and got.rows == want.rows
        assert list(got.columns) == list(want.columns)
        for name, c in want.columns.items():
            g = got.columns[name]
            assert (g.kind, g.dtype_code, g.dims, g.rows) == (c.kind, c.dtype_code, c.dims, c.rows)
            np.testing.assert_array_equal(g.to_numpy(), c.to_numpy())
            assert g.to_numpy().dtype == c.to_numpy().dtype
            np.testing.assert_array_equal(g.valid(), c.valid())
    # Headers that differ from a kept one only in the frame's length, its
    # rows or its column count are checked anew.
    a = fixed(0, 3)
    fr._layouts.clear()
    fr.parse_aligned(fr.aligned_copy(a))
    with pytest.raises(fr.FrameError):
        fr.parse_aligned(fr.aligned_copy(a[:-64]))  # its buffers past the end
    z3 = build_frame(0, 3, [column("z", FIXED, 5, [0], validity=b"\x07")])
    z100 = build_frame(1, 100, [column("z", FIXED, 5, [0], validity=b"\x07")])
    fr.parse_aligned(fr.aligned_copy(z3))
    with pytest.raises(fr.FrameError, match="validity too short"):
        fr.parse_aligned(fr.aligned_copy(z100))
    two = build_frame(0, 3, [column("a", FIXED, 3, [], bytes(3)), column("b", FIXED, 3, [], bytes(3))])
    one = bytearray(two)
    struct.pack_into("<I", one, 12, 1)
    fr.parse_aligned(fr.aligned_copy(two))
    assert list(fr.parse_aligned(fr.aligned_copy(bytes(one))).columns) == ["a"]
    # Ragged and bytes columns' layouts change from frame to frame: none kept.
    fr._layouts.clear()
    fr.parse_aligned(fr.aligned_copy(sample()))
    assert not fr._layouts
