"""``host_call`` in the program's entry: a call back into the runtime (tfc/ir/ops.py).

The module holds a pointer ``tfc_host_callback`` (null until the runtime sets it: see
``Executable.set_host_handler``) to ``i32 callback(i64 call, i8** buffers, i64* dims)``:
``call`` numbers the host calls in emission order (``program.host_calls`` describes each),
``buffers`` holds each operand's address and ``dims`` all their dims, operand after operand.
A non-zero return (the host side raised) stops the program with that status, the error
record naming the op, as a failed check does. The two arrays are allocas in the entry
block, so a host call inside a loop does not grow the stack.
"""
from __future__ import annotations

from llvmlite import ir as ll

from tfc import ir
from tfc import program_errors as checks

from ..llvm_util import I8P, I32, I64, I64P, CodegenError, const_i64

HOST_CALLBACK_GLOBAL = "tfc_host_callback"
CALLBACK_TYPE = ll.FunctionType(I32, [I64, I8P.as_pointer(), I64P])


def _callback_global(module: ll.Module):
    existing = module.globals.get(HOST_CALLBACK_GLOBAL)
    if existing is not None:
        return existing
    pointer = ll.GlobalVariable(module, I8P, name=HOST_CALLBACK_GLOBAL)
    pointer.initializer = ll.Constant(I8P, None)
    return pointer


def _entry_alloca(b: ll.IRBuilder, element, count: int, name: str):
    """An alloca of ``count`` elements at the start of the function's entry block."""
    entry = b.function.entry_basic_block
    front = ll.IRBuilder(entry)
    front.position_before(entry.instructions[0])
    return front.alloca(element, size=max(1, count), name=name)


def emit_host_call(program, main, index: int, op: ir.Operation) -> None:
    if not program.host_calls_allowed:
        raise CodegenError(f"host_call of '{op.attrs['ops'][-1]}': this target has no runtime to call back "
                           "(ahead-of-time artifacts and the GPU run without Python)")
    b = main.b
    number = len(program.host_calls)
    program.host_calls.append((list(op.attrs["ops"]), list(op.attrs["tensors"]),
                               [(t.type.elem.value, t.type.rank) for t in op.operands]))
    buffers = _entry_alloca(b, I8P, len(op.operands), f"host{number}.buffers")
    total_rank = sum(t.type.rank for t in op.operands)
    dims = _entry_alloca(b, I64, total_rank, f"host{number}.dims")
    position = 0
    for k, operand in enumerate(op.operands):
        b.store(main.pointer(program.buffer_of(operand)), b.gep(buffers, [const_i64(k)]))
        for d in operand.type.shape:
            b.store(main.dim(d), b.gep(dims, [const_i64(position)]))
            position += 1
    callback = b.bitcast(b.load(_callback_global(program.module)), CALLBACK_TYPE.as_pointer())
    status = b.call(callback, [const_i64(number), buffers, dims])
    failed = b.icmp_signed("!=", status, ll.Constant(I32, 0))
    with b.if_then(failed, likely=False):
        b.store(const_i64(index), b.gep(main.error_record, [const_i64(checks.OP)]))
        b.ret(status)


EMITTERS = {"host_call": emit_host_call}
