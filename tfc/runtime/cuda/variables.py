"""A session's variables in GPU memory: kept there between runs, copied only when stale.

Each variable a GPU step touches gets a device buffer that lives as long as the session.
A copy is made only when one side is stale:

- host -> device before a GPU step, when the host value changed since the last copy
  (initialised or assigned by a CPU step, restored by a host op);
- device -> host when the host value is read (a CPU step, ``tfc.compile`` on the
  session, a saver, ``Session.close``... all read through ``SyncedValues``), after a GPU
  step wrote the variable.

So a training loop on the GPU copies its weights to the device once, and back only
when something on the host asks for them (``Session.run(w)`` itself is a GPU step that
reads the device copy and downloads just that fetch).

With several GPUs each has its own ``DeviceVariables`` (``SyncedValues.devices``, by
ordinal): at most one side holds a value newer than the host's; a GPU step writing a
variable makes the other GPUs' copies stale, and a GPU needing a variable another GPU
wrote last gets it through the host (downloaded from that one, uploaded to this one).
"""
from __future__ import annotations

import numpy as np

HOST, DEVICE, BOTH = "host", "device", "both"  # which side holds the newest value


class DeviceVariables:
    """``device``: a GPU program's device (tfc/runtime/cuda/executable.py: a CudaDevice, or
    the host emulation's); every program of the process shares its memory."""

    def __init__(self, device):
        self.device = device
        self._buffers: dict = {}  # name -> the device allocation
        self._newest: dict = {}  # name -> HOST, DEVICE or BOTH
        self._hosts: dict = {}  # name -> the host array last synchronised with

    def pointer(self, name: str, host: np.ndarray) -> int:
        """The device copy of variable ``name`` (uploaded now if the host's is newer)."""
        buffer = self._buffers.get(name)
        if buffer is None or buffer.nbytes < host.nbytes:
            if buffer is not None:
                self.device.free(buffer)
            buffer = self._buffers[name] = self.device.alloc(max(host.nbytes, 1))
            self._newest[name] = HOST
        if self._newest.get(name) == HOST or self._hosts.get(name) is not host:
            self.device.upload(buffer.ptr, host.ctypes.data, host.nbytes)
            self._newest[name] = BOTH
            self._hosts[name] = host
        return buffer.ptr

    def written_on_device(self, name: str, host: np.ndarray) -> None:
        self._newest[name] = DEVICE
        self._hosts[name] = host

    def written_on_host(self, name: str) -> None:
        if name in self._buffers:
            self._newest[name] = HOST

    def sync_to_host(self, name: str, host: np.ndarray) -> None:
        """Bring ``host`` up to date if the device holds the newer value."""
        if self._newest.get(name) == DEVICE:
            self.device.download(self._hosts.get(name, host).ctypes.data, self._buffers[name].ptr, host.nbytes)
            self._newest[name] = BOTH

    def on_device(self, name: str) -> bool:
        return self._newest.get(name) == DEVICE

    def release(self) -> None:
        for buffer in self._buffers.values():
            self.device.free(buffer)
        self._buffers.clear()
        self._newest.clear()
        self._hosts.clear()


class SyncedValues(dict):
    """A session's variable values (name -> host array) that first copy back a value a GPU
    step left newer on the device, whenever one is read."""

    def __init__(self):
        super().__init__()
        self.devices: dict = {}  # ordinal -> DeviceVariables, once a GPU step ran there

    @property
    def device(self):
        """GPU 0's DeviceVariables (else another GPU's), or None while no GPU step ran."""
        devices = self.devices
        if not devices:
            return None
        return devices.get(0) or next(iter(devices.values()))

    def on(self, ordinal: int, device) -> DeviceVariables:
        """GPU ``ordinal``'s DeviceVariables (made on ``device``, a program's device there)."""
        variables = self.devices.get(ordinal)
        if variables is None:
            variables = self.devices[ordinal] = DeviceVariables(device)
        return variables

    def pointer(self, ordinal: int, name: str, host: np.ndarray) -> int:
        """The device copy of ``name`` on GPU ``ordinal``, current (through the host when
        another GPU wrote it last)."""
        for other, variables in self.devices.items():
            if other != ordinal and variables.on_device(name):
                variables.sync_to_host(name, host)
                self.devices[ordinal].written_on_host(name)
        return self.devices[ordinal].pointer(name, host)

    def written_on_device(self, ordinal: int, name: str, host: np.ndarray) -> None:
        for other, variables in self.devices.items():
            if other == ordinal:
                variables.written_on_device(name, host)
            else:
                variables.written_on_host(name)  # (its copy is stale now)

    def written_on_host(self, name: str) -> None:
        for variables in self.devices.values():
            variables.written_on_host(name)

    def _sync(self, name) -> None:
        for variables in self.devices.values():
            if variables.on_device(name):
                host = dict.get(self, name)
                if host is not None:
                    variables.sync_to_host(name, host)
                return

    def __getitem__(self, name):
        self._sync(name)
        return dict.__getitem__(self, name)

    def get(self, name, default=None):
        self._sync(name)
        return dict.get(self, name, default)

    def unsynced(self, name):
        """The host array of ``name`` as it is (for a GPU step, which uses the device copy)."""
        return dict.get(self, name)

    def values(self):
        for name in list(self):
            self._sync(name)
        return dict.values(self)

    def items(self):
        for name in list(self):
            self._sync(name)
        return dict.items(self)
