"""Devices: where executables run. The CPU as a whole ("cpu"), each NUMA node ("cpu:numa0"),
core sets ("cpu:cores0-3", made with ``cpu_set`` or by name) and remote workers
(``nxe.RemoteDevice``, "remote:host:port") are listed by ``devices()``.

    exe = graph.compile(device=nxe.cpu_set([0, 1]))   # two workers pinned to CPUs 0 and 1
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, Union

from ._binding import check, ffi, lib, text

_KINDS = {1: "cpu", 2: "remote"}

# RemoteDevice objects by device name, so that devices() hands back the client a caller made.
_remote_objects: dict[str, Any] = {}


class Device:
    """A device of the library's table. ``name``, ``kind`` ("cpu" or "remote"), ``isa`` (the
    kernels' ISA level for CPU devices, "" for remote ones), ``cores`` (the CPU numbers, () for
    remote devices) and ``numa_node`` (the node number of a "cpu:numa<N>" device, else -1)."""

    def __init__(self, handle: Any) -> None:
        info = ffi.new("nxe_device_info *")
        info.struct_size = ffi.sizeof("nxe_device_info")
        check(lib.nxe_device_get_info(handle, info))
        self._handle = handle
        self.name: str = text(info.name) or ""
        self.kind: str = _KINDS.get(int(info.kind), str(int(info.kind)))
        self.isa: str = ffi.string(info.isa).decode()
        self.cores: tuple[int, ...] = (tuple(int(info.cores[i]) for i in range(info.num_cores))
                                       if info.cores != ffi.NULL else ())
        self.numa_node: int = int(info.numa_node)

    @property
    def num_cores(self) -> int:
        return len(self.cores)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "isa": self.isa,
                "num_cores": self.num_cores, "cores": list(self.cores),
                "numa_node": self.numa_node}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other._handle == self._handle

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"<nxe.Device {self.name!r} kind={self.kind} cores={self.num_cores}>"


def devices() -> list[Device]:
    """Every device listed now: "cpu" first, then the NUMA nodes, then core sets and remote
    workers in the order they were added (a remote one as the ``RemoteDevice`` made for it)."""
    count = ffi.new("int32_t *")
    check(lib.nxe_device_count(count))
    result: list[Device] = []
    for index in range(count[0]):
        out = ffi.new("const nxe_device **")
        check(lib.nxe_device_get(index, out))
        device = Device(out[0])
        result.append(_remote_objects.get(device.name, device))
    return result


def device(name: str) -> Device:
    """The device named ``name``; "cpu:cores<list>" ("cpu:cores0-3,6") makes a core set."""
    out = ffi.new("const nxe_device **")
    check(lib.nxe_device_find(name.encode(), out))
    return _remote_objects.get(name, Device(out[0]))


def cpu_set(cores: Sequence[int]) -> Device:
    """The CPU device of these cores (no repeats; each one this process may run on)."""
    values = [operator.index(c) for c in cores]
    out = ffi.new("const nxe_device **")
    check(lib.nxe_device_create_cpu_set(ffi.new("int32_t[]", values or [0]), len(values), out))
    return Device(out[0])


DeviceLike = Union[Device, str, None]


def device_handle(value: DeviceLike) -> Any:
    """The C handle for a device argument: None (the default CPU), a Device or a name."""
    if value is None:
        return ffi.NULL
    if isinstance(value, str):
        value = device(value)
    if not isinstance(value, Device):
        raise TypeError(f"device: expected nxe.Device, a device name or None, got "
                        f"{type(value).__name__}")
    return value._handle
