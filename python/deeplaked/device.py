"""Placing frames on a CUDA device (to_torch(device="cuda")).

A frame goes to the device in one host-to-device copy of its whole buffer,
and each fixed-width column is a view of the device copy at the column's
offset: no copy per column, and none on the host when the frame lies in a
shared area (SHARED_MEMORY). Such an area is registered with CUDA
(cudaHostRegister) the first time one of its frames is copied, so the copy
is a DMA straight out of the area; the frame stays held (not released to
the server) until an event recorded after its copies has completed, and
the area is unregistered when the stream ends. A frame received through
the socket is copied from pinned memory (pin_memory=True: one host copy,
torch's pinned allocator keeps it until the copy is done) or from its own
pageable buffer (the copy returns once CUDA has staged the bytes).
"""

import collections

import numpy as np
import torch

from . import rawcopy
from .frame import FIXED

# Frames held until their copies are done: the oldest is waited for past
# this many.
MAX_PENDING = 64

_dtypes = {}


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


class Placer:
    """Copies one stream's frames to a device; close() when the stream ends."""

    def __init__(self, device, pin):
        self.device = device
        self.pin = pin
        self.pending = collections.deque()  # (event, host tensor of a held frame)
        self.registered = []  # (addr, area) registered by this placer
        self.refused = set()  # addresses of areas cudaHostRegister refused

    def frame(self, frame):
        """Start copying the frame's buffer to the device; returns the device
        buffer and whether the frame must be held (finish)."""
        host = torch.from_numpy(frame.buffer)
        held = self._registered(frame.buffer)
        if held:
            src = host
            stats.direct += 1
        elif self.pin:
            src = host.pin_memory()
        else:
            src = host
        dev = torch.empty(frame.buffer.nbytes, dtype=torch.uint8, device=self.device)
        dev.copy_(src, non_blocking=True)
        return dev, (host if held else None)

    @staticmethod
    def column(dev, frame, col):
        """A fixed column of the frame as a view of its device copy, or None
        where its values do not lie in the frame's buffer."""
        v = col.values
        off = v.ctypes.data - frame.buffer.ctypes.data
        if off < 0 or off + v.nbytes > frame.buffer.nbytes or off % v.itemsize:
            return None
        t = dev[off:off + v.nbytes].view(torch_dtype(v, col.dtype_code))
        return t.view((col.rows,) + tuple(col.dims))

    def finish(self, held):
        """After every copy of a frame (held is frame()'s second result):
        hold it until they are done, and let go of the frames whose copies
        are."""
        if held is not None:
            ev = torch.cuda.Event()
            ev.record(torch.cuda.current_stream(self.device))
            self.pending.append((ev, held))
        while self.pending and (len(self.pending) > MAX_PENDING or self.pending[0][0].query()):
            ev, _ = self.pending.popleft()
            ev.synchronize()

    def close(self):
        """Wait for the copies out of held frames, let the frames go and
        unregister the areas."""
        while self.pending:
            ev, _ = self.pending.popleft()
            try:
                ev.synchronize()
            except Exception:  # a CUDA error: the frame is let go all the same
                pass
        for addr, _area in self.registered:
            try:
                torch.cuda.cudart().cudaHostUnregister(addr)
            except Exception:
                pass
        self.registered = []

    def _registered(self, buf):
        """Whether buf lies in a shared area registered with CUDA,
        registering the area the first time."""
        span = rawcopy.area_of(buf)
        if span is None:
            return False
        addr, area = span
        if any(a == addr for a, _ in self.registered):
            return True
        if addr in self.refused:
            return False
        with torch.cuda.device(self.device):
            err = torch.cuda.cudart().cudaHostRegister(addr, area.size, 0)
        if int(err) != 0:
            self.refused.add(addr)
            return False
        self.registered.append((addr, area))  # the area stays mapped until close()
        stats.registered += 1
        return True
