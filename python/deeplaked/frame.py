"""Parsing of tensor-stream frames (docs/tensor-stream.md, version 1)."""

import math
import struct

import numpy as np

MAGIC = b"DLTF"
VERSION = 1
ALIGN = 64
MAX_ROWS = 1 << 20
RAGGED_DIM = 0xFFFFFFFF

FIXED, RAGGED, BYTES = 0, 1, 2

# Element types by wire code: numpy dtype. bfloat16 (8) arrives as raw
# uint16 bits; to_torch views them as torch.bfloat16.
DTYPES = {
    1: np.dtype(np.bool_),
    2: np.dtype(np.int8),
    3: np.dtype(np.uint8),
    4: np.dtype("<i2"),
    5: np.dtype("<i4"),
    6: np.dtype("<i8"),
    7: np.dtype("<f2"),
    8: np.dtype("<u2"),
    9: np.dtype("<f4"),
    10: np.dtype("<f8"),
}
DTYPE_NAMES = {1: "bool", 2: "int8", 3: "uint8", 4: "int16", 5: "int32", 6: "int64",
               7: "float16", 8: "bfloat16", 9: "float32", 10: "float64"}
# Logical types of bytes columns.
TEXT, JSON, JSONB, BYTEA, VARCHAR = 1, 2, 3, 4, 5

_HEADER = struct.Struct("<4sHHIIQII")
_BUFFERS = struct.Struct("<8Q")


class FrameError(ValueError):
    """A frame that does not follow the format: bad magic, an unknown
    version, or buffers outside the frame."""


class Column:
    """One column of a frame, its buffers wrapped as numpy arrays over the
    frame's (aligned) memory."""

    __slots__ = ("name", "kind", "dtype_code", "logical", "dims", "rows",
                 "validity", "offsets", "shapes", "values")

    def valid(self):
        """A bool array, True where the row is not NULL."""
        if self.validity is None:
            return np.ones(self.rows, dtype=bool)
        bits = np.unpackbits(self.validity, bitorder="little")
        return bits[: self.rows].astype(bool)

    def to_numpy(self):
        """The column as numpy: fixed → array [rows, *dims]; ragged → list of
        arrays, each in its row's shape; bytes → list of bytes (bytea) or str
        (text, json), None for NULL. A NULL row of a fixed column is zeros."""
        if self.kind == FIXED:
            return self.values.reshape((self.rows,) + tuple(self.dims))
        valid = None if self.validity is None else self.valid()
        out = []
        if self.kind == RAGGED:
            nd = len(self.dims)
            for i in range(self.rows):
                v = self.values[self.offsets[i]:self.offsets[i + 1]]
                out.append(v.reshape(tuple(int(s) for s in self.shapes[i * nd:(i + 1) * nd])))
            return out
        raw = self.values.tobytes() if self.values is not None else b""
        for i in range(self.rows):
            if valid is not None and not valid[i]:
                out.append(None)
                continue
            b = raw[self.offsets[i]:self.offsets[i + 1]]
            out.append(b if self.logical == BYTEA else b.decode("utf-8"))
        return out


class Source:
    """What a stream of a table reads, from its first frame: the table's
    version, the commit naming it (VERSION '<commit>' reads it again) and
    its branch ("" for main)."""

    __slots__ = ("version", "commit", "branch")

    def __init__(self, version, commit, branch):
        self.version, self.commit, self.branch = version, commit, branch

    def __repr__(self):
        return "Source(version=%d, commit=%r, branch=%r)" % (self.version, self.commit, self.branch)


# The header's flag of a source block after the column descriptors.
FLAG_SOURCE = 1


def _source(mv, p, hlen):
    if p + 10 > hlen:
        raise FrameError("header ends inside the source block")
    (version,) = struct.unpack_from("<Q", mv, p)
    p += 8
    out = []
    for _ in range(2):
        if p + 2 > hlen:
            raise FrameError("header ends inside the source block")
        (n,) = struct.unpack_from("<H", mv, p)
        if p + 2 + n > hlen:
            raise FrameError("header ends inside the source block")
        out.append(bytes(mv[p + 2:p + 2 + n]).decode("utf-8"))
        p += 2 + n
    return Source(version, out[0], out[1])


class Frame:
    """A parsed frame: batch_index, rows and columns (name → Column, in the
    frame's order); source (a Source) in a stream's first frame, else
    None."""

    __slots__ = ("batch_index", "rows", "columns", "buffer", "source")

    def to_numpy(self):
        return {name: c.to_numpy() for name, c in self.columns.items()}


def aligned_empty(n):
    """A fresh numpy uint8 buffer of n bytes whose first byte is 64-byte
    aligned (numpy only promises 16)."""
    raw = np.empty(n + ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + n]


def aligned_copy(payload):
    """Copy payload into a fresh aligned buffer (aligned_empty), so every
    buffer of the frame is aligned as well."""
    buf = aligned_empty(len(payload))
    buf[:] = np.frombuffer(payload, dtype=np.uint8)
    return buf


def parse_frame(payload):
    """Parse one CopyData payload into a Frame. The payload is copied once
    into an aligned buffer the frame's arrays then share (they own it: a
    batch stays valid after the next one arrives)."""
    _check_header(payload)
    return parse_aligned(aligned_copy(payload))


def parse_aligned(buf):
    """Parse a frame already in a 64-byte aligned numpy uint8 buffer (as
    aligned_empty makes) without copying it: the frame's arrays are views of
    buf, so buf must not be written to while they are in use."""
    if buf.ctypes.data % ALIGN:
        raise ValueError("frame buffer at an address that is not a multiple of %d" % ALIGN)
    hlen, ncols, index, rows = _check_header(buf)
    mv = memoryview(buf).cast("B")
    n = len(buf)
    # The frames of a stream of fixed-width columns have one header but for
    # the batch index (bytes 16 to 24), so their checked layout is kept.
    key = (n, bytes(mv[:16]), bytes(mv[24:hlen]))
    cached = _layouts.get(key)
    if cached is None:
        layouts = []
        p = _HEADER.size
        for _ in range(ncols):
            lay, p = _column_layout(mv, hlen, p, rows, n)
            layouts.append(lay)
        cached = (layouts, p)
        if all(lay[1] == FIXED for lay in layouts):
            if len(_layouts) >= _MAX_LAYOUTS:
                _layouts.clear()
            _layouts[key] = cached
    layouts, end = cached
    frame = Frame()
    frame.batch_index, frame.rows, frame.buffer = index, rows, buf
    frame.source = None
    if struct.unpack_from("<H", mv, 6)[0] & FLAG_SOURCE:
        frame.source = _source(mv, end, hlen)
    frame.columns = cols = {}
    for lay in layouts:
        c = _column(buf, lay, rows)
        cols[c.name] = c
    return frame


# Checked column layouts of frames of fixed-width columns, by the header's
# bytes but for the batch index (see parse_aligned).
_layouts = {}
_MAX_LAYOUTS = 64


def _check_header(payload):
    if len(payload) < _HEADER.size:
        raise FrameError("frame of %d bytes is shorter than the header" % len(payload))
    if bytes(payload[:4]) != MAGIC:
        raise FrameError("bad frame magic %r, want %r (is this FORMAT tensor?)" % (bytes(payload[:4]), MAGIC))
    magic, version, _flags, hlen, ncols, index, rows, _ = _HEADER.unpack_from(payload, 0)
    if version != VERSION:
        raise FrameError("frame version %d, this client reads version %d" % (version, VERSION))
    if hlen < _HEADER.size or hlen > len(payload):
        raise FrameError("header length %d out of range (frame %d bytes)" % (hlen, len(payload)))
    if rows > MAX_ROWS:
        raise FrameError("%d rows in a batch, more than %d" % (rows, MAX_ROWS))
    return hlen, ncols, index, rows


def _column_layout(mv, hlen, p, rows, n):
    """Read and check the column descriptor at p of a frame of n bytes and
    rows rows, all but what depends on the buffers' contents; return its
    layout (as _column takes it) and the descriptor's end."""
    if p + 2 > hlen:
        raise FrameError("header ends inside a column descriptor")
    (nlen,) = struct.unpack_from("<H", mv, p)
    p += 2
    if p + nlen + 4 > hlen:
        raise FrameError("header ends inside a column descriptor")
    name = bytes(mv[p:p + nlen]).decode("utf-8")
    p += nlen
    kind, code, ndim, flags = struct.unpack_from("<BBBB", mv, p)
    p += 4
    if p + 4 * ndim + _BUFFERS.size > hlen:
        raise FrameError("header ends inside a column descriptor")
    dims = tuple(-1 if d == RAGGED_DIM else d for d in struct.unpack_from("<%dI" % ndim, mv, p))
    p += 4 * ndim
    locs = _BUFFERS.unpack_from(mv, p)
    p += _BUFFERS.size
    spans = []
    for k in range(4):
        off, ln = locs[2 * k], locs[2 * k + 1]
        if ln == 0:
            spans.append(None)
            continue
        if off % ALIGN or off > n or ln > n - off:
            raise FrameError("column %r: buffer %d (offset %d, length %d) outside the %d-byte frame or misaligned"
                             % (name, k, off, ln, n))
        spans.append((off, off + ln))
    validity, offsets, shapes, values = spans
    code_, logical = None, None
    if kind in (FIXED, RAGGED):
        if code not in DTYPES:
            raise FrameError("column %r: unknown dtype %d" % (name, code))
        code_ = code
        dt = DTYPES[code]
    elif kind == BYTES:
        if not TEXT <= code <= VARCHAR:
            raise FrameError("column %r: unknown logical type %d" % (name, code))
        logical = code
        dt = np.dtype(np.uint8)
    else:
        raise FrameError("column %r: unknown column kind %d" % (name, kind))
    if flags & 1:
        if validity is None or validity[1] - validity[0] < (rows + 7) // 8:
            raise FrameError("column %r: validity too short for %d rows" % (name, rows))
    else:
        validity = None
    nvalues = 0 if values is None else values[1] - values[0]
    if nvalues % dt.itemsize:
        raise FrameError("column %r: values are not whole %s elements" % (name, dt))
    if kind == FIXED:
        if -1 in dims:
            raise FrameError("column %r: fixed column with a ragged dimension" % name)
        want = rows * math.prod(dims)
        if nvalues // dt.itemsize != want:
            raise FrameError("column %r: %d values, want %d" % (name, nvalues // dt.itemsize, want))
    else:
        if offsets is None or offsets[1] - offsets[0] != (rows + 1) * 8:
            raise FrameError("column %r: offsets of the wrong length for %d rows" % (name, rows))
        if kind == RAGGED:
            nshapes = 0 if shapes is None else shapes[1] - shapes[0]
            if (shapes is None and rows * ndim) or (shapes is not None and nshapes != rows * ndim * 4):
                raise FrameError("column %r: shapes of the wrong length" % name)
    return (name, kind, code_, logical, dims, dt, validity, offsets, shapes, values), p


def _column(buf, lay, rows):
    """The Column of a frame in buf with layout lay (see _column_layout),
    its buffers' contents checked where the layout could not be."""
    name, kind, code, logical, dims, dt, validity, offsets, shapes, values = lay
    c = Column()
    c.name, c.kind, c.rows, c.dims, c.dtype_code, c.logical = name, kind, rows, list(dims), code, logical
    c.validity = None if validity is None else buf[validity[0]:validity[1]]
    c.values = (buf[values[0]:values[1]] if values is not None else np.empty(0, dtype=np.uint8)).view(dt)
    c.offsets = c.shapes = None
    if kind != FIXED:
        c.offsets = buf[offsets[0]:offsets[1]].view("<u8")
        if rows and (np.any(np.diff(c.offsets.astype(np.int64)) < 0) or c.offsets[-1] > len(c.values)):
            raise FrameError("column %r: offsets not ascending within the values" % name)
        if kind == RAGGED:
            c.shapes = buf[shapes[0]:shapes[1]].view("<u4") if shapes is not None else np.empty(0, dtype="<u4")
    return c
