"""The runtime side of ``host_call`` (tfc/ir/ops.py, tfc/codegen/kernels/host_call.py).

A program with host calls holds a pointer ``tfc_host_callback``; ``HostCalls.install``
points it at a ctypes callback of this executable. When the program reaches host call
``number``, the callback copies the operands out of the program's buffers (their element
types and ranks are in the description; their dims come with the call) and hands them to
the handler with the call's graph op and tensor names. In a Session the handler finds
those ops and tensors in the graph by name (the executable's ``op_resolver``) and runs the
ops' host sides (``tfc.runtime.host.run_host_call``), on the calling thread: the program
waits, so a tf.Print inside a while loop prints once per iteration, in order.

An exception raised by the host side is kept (per thread) and the callback returns
``HOST_CALL_FAILED``; the program stops there and the executable re-raises the exception.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Callable, Optional

import numpy as np

from tfc import ir

HOST_CALL_FAILED = 64  # a status no check uses (tfc/program_errors.py codes are small)
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
                            ctypes.POINTER(ctypes.c_int64))


class HostCalls:
    """``calls``: per host call, (graph op names, graph tensor names, [(element type, rank)]);
    ``handler(ops, tensors, arrays)`` runs one (``graph_handler``'s, in a Session)."""

    def __init__(self, calls: list, handler: Callable[[list, list, list], None]):
        self.calls = [(list(ops), list(tensors), [(ir.ElemType(elem), int(rank)) for elem, rank in operands])
                      for ops, tensors, operands in calls]
        self.handler = handler
        self._failures = threading.local()
        self._callback = CALLBACK(self._call)  # kept alive as long as the program may call it

    def describe(self) -> list:
        return [[ops, tensors, [[elem.value, rank] for elem, rank in operands]]
                for ops, tensors, operands in self.calls]

    def install(self, code) -> None:
        """Point the program's callback pointer (``code``: its CompiledCode) at this object."""
        from tfc.codegen.kernels.host_call import HOST_CALLBACK_GLOBAL

        address = code.engine.get_global_value_address(HOST_CALLBACK_GLOBAL)
        if not address:
            raise RuntimeError("the compiled program has host calls but no host callback pointer")
        ctypes.c_void_p.from_address(address).value = ctypes.cast(self._callback, ctypes.c_void_p).value

    def take_failure(self) -> Optional[BaseException]:
        """The exception the last failed host call on this thread raised (then forgotten)."""
        failure = getattr(self._failures, "error", None)
        self._failures.error = None
        return failure

    def _call(self, number: int, buffers, dims) -> int:
        try:
            ops, tensors, operands = self.calls[number]
            self.handler(ops, tensors, _operand_values(operands, buffers, dims))
            return 0
        except BaseException as error:  # noqa: BLE001 - handed back to the caller of the program
            self._failures.error = error
            return HOST_CALL_FAILED


def graph_handler(resolve: Callable[[str], object]) -> Callable[[list, list, list], None]:
    """A handler running the host sides of the graph ops of those names (``resolve``:
    op name -> op), given the values of the named tensors."""
    from .host import run_host_call

    def find(name: str):
        op = resolve(name)
        if op is None:
            raise RuntimeError(f"the program calls back the host for '{name}', which its graph does not have")
        return op

    def handle(ops: list, tensors: list, arrays: list) -> None:
        given = {}
        for name, array in zip(tensors, arrays):
            op_name, _, index = name.rpartition(":")
            given[find(op_name).outputs[int(index)]] = array
        run_host_call([find(name) for name in ops], given)

    return handle


def _operand_values(operands: list, buffers, dims) -> list:
    """Copies of the operands, read from the program's buffers."""
    arrays, position = [], 0
    for k, (elem, rank) in enumerate(operands):
        shape = tuple(int(dims[position + i]) for i in range(rank))
        position += rank
        dtype = elem.np_dtype
        count = int(np.prod(shape, dtype=np.int64))
        if count == 0:
            arrays.append(np.zeros(shape, dtype=dtype))
            continue
        raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(buffers[k])
        arrays.append(np.frombuffer(raw, dtype=dtype).reshape(shape).copy())
    return arrays
