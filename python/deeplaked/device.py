"""Placing frames on a CUDA device (to_torch(device="cuda")).

A frame whose fixed-width columns make most of it goes to the device in one
host-to-device copy of its whole buffer, and its large fixed-width columns
are views of the device copy at their offsets; a small column (a label
beside images) is copied out of it on the device, so that keeping it does
not keep the whole frame's device memory. Other frames go column by column.

A frame in a shared area (SHARED_MEMORY) needs no copy on the host: the
area is registered with CUDA (cudaHostRegister, which pins all of it) the
first time one of its frames is copied, so the copy is a DMA straight out
of the area. Such a frame stays held (not released to the server) until an
event recorded after its copies has completed; frames are let go as their
copies complete, and the oldest is waited for when the held frames would
take half of the area (past which the server sends frames through the
socket). When the stream ends, every copy is waited for and the area is
unregistered. DEEPLAKED_CUDA_REGISTER=0 turns registering off.

A frame received through the socket is copied from pinned memory
(pin_memory=True: one host copy, which torch's pinned allocator keeps until
the copy is done) or from its own pageable buffer (the copy returns once
CUDA has staged the bytes).
"""

import collections
import ctypes
import os

import numpy as np
import torch

from . import rawcopy
from .frame import FIXED

# Frames held until their copies are done: past this many, or past half of
# their area, the oldest is waited for.
MAX_PENDING = 64
# A frame goes in one copy when its fixed-width columns are at least this
# share of it; a column under this share of the copy is copied out of it.
WHOLE_FRAME_SHARE = 0.5
SMALL_COLUMN_SHARE = 0.25

_dtypes = {}
# Areas (with their held frames) left registered because waiting for
# their copies failed or was interrupted: unregistering or releasing them
# could let a copy in flight read memory given back. Kept for the
# process's life.
_abandoned = []


class Stats:
    """Counts over the process: frames copied straight out of a
    registered shared area (direct), and areas registered."""

    def __init__(self):
        self.direct = 0
        self.registered = 0


stats = Stats()


def torch_dtype(arr, code):
    """The torch dtype of a fixed column's numpy values (bfloat16, code 8,
    arrives as uint16 bits)."""
    if code == 8:
        return torch.bfloat16
    t = _dtypes.get(arr.dtype)
    if t is None:
        t = _dtypes[arr.dtype] = torch.from_numpy(np.empty(0, dtype=arr.dtype)).dtype
    return t


def whole_frame(frame):
    """Whether the frame goes to the device in one copy: its fixed-width
    columns are most of its bytes."""
    fixed = sum(c.values.nbytes for c in frame.columns.values() if c.kind == FIXED)
    return fixed > 0 and fixed >= WHOLE_FRAME_SHARE * frame.buffer.nbytes


def _clear_cuda_error():
    """Reset the CUDA runtime's last error after a call that failed, which
    would otherwise surface at torch's next kernel launch check: through
    cudaGetLastError of the libcudart loaded in the process."""
    try:
        with open("/proc/self/maps") as m:
            paths = {line.split()[-1] for line in m if "libcudart" in line and "/" in line}
        for p in paths:
            ctypes.CDLL(p).cudaGetLastError()
    except Exception:
        pass


class Placer:
    """Copies one stream's frames to a device; close() when the stream ends."""

    whole = staticmethod(whole_frame)

    def __init__(self, device, pin):
        self.device = device
        self.pin = pin
        self.pending = collections.deque()  # (event, host tensor of a held frame, area, bytes)
        self.held_bytes = {}  # id(area) → bytes of its frames held
        self.registered = []  # (addr, area) registered by this placer
        self.refused = set()  # addresses of areas not registered
        self.register = os.environ.get("DEEPLAKED_CUDA_REGISTER", "1") != "0"

    def frame(self, frame):
        """Start copying the frame's buffer to the device; returns the device
        buffer and what finish() must hold (None: nothing)."""
        host = torch.from_numpy(frame.buffer)
        area = self._registered(frame.buffer)
        if area is not None:
            src = host
            stats.direct += 1
        elif self.pin:
            src = host.pin_memory()
        else:
            src = host
        dev = torch.empty(frame.buffer.nbytes, dtype=torch.uint8, device=self.device)
        dev.copy_(src, non_blocking=True)
        return dev, (None if area is None else (host, area))

    def held(self, frame):
        """What finish() must hold for a frame copied column by column (its
        ragged rows and columns go with .to(non_blocking=True), which reads
        a registered area after the call returns)."""
        area = self._registered(frame.buffer)
        return None if area is None else (torch.from_numpy(frame.buffer), area)

    @staticmethod
    def column(dev, frame, col):
        """A fixed column of the frame on the device, from its one copy dev:
        a view of dev, or for a small column a copy of its part of dev;
        None where its values do not lie in the frame's buffer."""
        v = col.values
        off = v.ctypes.data - frame.buffer.ctypes.data
        if off < 0 or off + v.nbytes > frame.buffer.nbytes or off % v.itemsize:
            return None
        t = dev[off:off + v.nbytes]
        if v.nbytes < SMALL_COLUMN_SHARE * dev.numel():
            t = t.clone()
        t = t.view(torch_dtype(v, col.dtype_code))
        return t.view((col.rows,) + tuple(col.dims))

    def finish(self, held):
        """After every copy of a frame has been issued (or failed): hold what
        frame() or held() returned until the copies are done, and let go
        of the frames whose copies are."""
        if held is not None:
            host, area = held
            ev = torch.cuda.Event()
            ev.record(torch.cuda.current_stream(self.device))
            n = host.numel()
            self.pending.append((ev, host, area, n))
            self.held_bytes[id(area)] = self.held_bytes.get(id(area), 0) + n
        self.retire()

    def retire(self):
        """Let go of the held frames whose copies are done; wait for the
        oldest while too many are held."""
        while self.pending:
            ev, _, area, n = self.pending[0]
            if not ev.query():
                over = self.held_bytes[id(area)] > (area.size - rawcopy.CONTROL_PAGE) // 2
                if len(self.pending) <= MAX_PENDING and not over:
                    return
                ev.synchronize()
            self.pending.popleft()
            self.held_bytes[id(area)] -= n

    def close(self):
        """Wait for every copy, then let the held frames go and unregister
        the areas. If the wait fails or is interrupted, the areas stay
        registered and their frames held (_abandoned): a copy may still be
        reading them."""
        if not self.pending and not self.registered:
            return
        done = False
        try:
            torch.cuda.synchronize(self.device)
            done = True
        finally:
            if not done:
                _abandoned.append((list(self.pending), self.registered))
                self.pending.clear()
                self.registered = []
        self.pending.clear()
        self.held_bytes.clear()
        for addr, _area in self.registered:
            try:
                with torch.cuda.device(self.device):
                    err = torch.cuda.cudart().cudaHostUnregister(addr)
                if int(err) != 0:
                    _clear_cuda_error()
            except Exception:
                pass
        self.registered = []

    def _registered(self, buf):
        """The shared area buf lies in when it is registered with CUDA
        (registering it the first time), else None."""
        span = rawcopy.area_of(buf)
        if span is None:
            return None
        addr, area = span
        for a, ar in self.registered:
            if a == addr:
                return ar
        if addr in self.refused or not self.register:
            return None
        with torch.cuda.device(self.device):
            err = torch.cuda.cudart().cudaHostRegister(addr, area.size, 0)
        if int(err) != 0:
            _clear_cuda_error()
            self.refused.add(addr)
            return None
        self.registered.append((addr, area))  # the area stays mapped until close()
        stats.registered += 1
        return area
