"""Builds frames as docs/tensor-stream.md lays them out, for the tests."""

import struct

ALIGN = 64


def _pad(b):
    return b + b"\0" * (-len(b) % ALIGN)


def column(name, kind, code, dims=(), values=b"", validity=None, offsets=None, shapes=None):
    return dict(name=name, kind=kind, code=code, dims=list(dims), values=values,
                validity=validity, offsets=offsets, shapes=shapes)


def build_frame(index, rows, cols, version=1, magic=b"DLTF"):
    hlen = 32 + sum(2 + len(c["name"].encode()) + 4 + 4 * len(c["dims"]) + 64 for c in cols)
    body_start = -(-hlen // ALIGN) * ALIGN
    body = b""
    locs = []
    for c in cols:
        offs = b"".join(struct.pack("<Q", o) for o in c["offsets"]) if c["offsets"] is not None else b""
        shp = b"".join(struct.pack("<I", s) for s in c["shapes"]) if c["shapes"] is not None else b""
        loc = []
        for b in (c["validity"] or b"", offs, shp, c["values"]):
            if not b:
                loc.append((0, 0))
                continue
            loc.append((body_start + len(body), len(b)))
            body = _pad(body + b)
        locs.append(loc)
    f = struct.pack("<4sHHIIQII", magic, version, 0, hlen, len(cols), index, rows, 0)
    for c, loc in zip(cols, locs):
        name = c["name"].encode()
        f += struct.pack("<H", len(name)) + name
        f += struct.pack("<BBBB", c["kind"], c["code"], len(c["dims"]), 1 if c["validity"] is not None else 0)
        f += b"".join(struct.pack("<I", d) for d in c["dims"])
        f += b"".join(struct.pack("<QQ", o, n) for o, n in loc)
    return _pad(f) + body
