"""Transposes through shared memory: a cooperative kernel (block.py) per 32 x 32 tile.

A transpose that moves the innermost dim (``[M, N] -> [N, M]``, a conv gradient's
``[n, h, w, c] -> [c, h, w, n]``) run one thread per output element writes neighbouring
addresses but reads addresses a whole dim apart (or the other way round): every warp
touches 32 cache lines for 32 elements. Here a block of 256 threads (32 x 8) moves a
32 x 32 tile between the two dims involved (``u``: the operand's innermost dim, ``v``:
the output's innermost dim), the other dims fixed by the block's item:

1. load phase: thread (tx, ty) reads operand rows ``v0 + ty + 8k`` (k < 4) at ``u0 + tx``:
   neighbouring threads, neighbouring addresses; into ``tile[v][u]`` (rows padded to 33
   elements, so the column reads below hit 32 different banks);
2. store phase: thread (tx, ty) writes output rows ``u0 + ty + 8k`` at ``v0 + tx``, from
   ``tile[tx][ty + 8k]``: again neighbouring addresses.

Positions past the dims' ends are neither read nor written. Values are copied, so the
result is the one-thread-per-element kernel's exactly.
"""
from __future__ import annotations

from tfc import ir
from tfc.ir.dims import dim_ceildiv, dims_product

from . import block
from ..llvm_util import const_i64, if_then, storage_type

TILE = 32
ROWS = 8  # thread rows: each thread moves TILE / ROWS elements per phase
THREADS = TILE * ROWS


def applies(op: ir.Operation) -> bool:
    """A transpose whose innermost dims differ (else one thread per element is coalesced)."""
    if op.name != "transpose":
        return False
    perm = list(op.attrs["perm"])
    return len(perm) >= 2 and perm[-1] != len(perm) - 1


def emit(program, index: int, op: ir.Operation) -> None:
    out_type = op.result.type
    rank = out_type.rank
    perm = list(op.attrs["perm"])
    u_dim = perm.index(rank - 1)  # the output dim holding the operand's innermost dim
    rest = [d for d in range(rank) if d not in (u_dim, rank - 1)]
    shape = out_type.shape
    items = dims_product([shape[d] for d in rest] + [dim_ceildiv(shape[u_dim], TILE),
                                                     dim_ceildiv(shape[rank - 1], TILE)])

    def describe(cooperative: block.Block) -> None:
        _Tiles(cooperative, op, perm, u_dim, rest).emit()

    block.emit(program, op, [op.result, op.operands[0]], index, THREADS, items, TILE * TILE, describe)


class _Tiles:
    def __init__(self, cooperative: block.Block, op: ir.Operation, perm: list, u_dim: int, rest: list):
        self.block = cooperative
        self.k = cooperative.k
        self.op = op
        self.perm = perm
        self.u_dim = u_dim
        self.v_dim = op.result.type.rank - 1
        self.rest = rest
        self.out_shape = self.k.shape(op.result.type)
        self.in_shape = self.k.shape(op.operands[0].type)

    def emit(self) -> None:
        k, b, cooperative = self.k, self.k.b, self.block
        elem = self.op.result.type.elem
        tile = cooperative.shared(storage_type(elem), TILE * (TILE + 1))
        U, V = self.out_shape[self.u_dim], self.out_shape[self.v_dim]
        UT = k.pro.sdiv(k.pro.add(U, const_i64(TILE - 1)), const_i64(TILE))
        VT = k.pro.sdiv(k.pro.add(V, const_i64(TILE - 1)), const_i64(TILE))
        item = cooperative.item
        vt = b.srem(item, VT)
        rest_item = b.sdiv(item, VT)
        ut, rest_flat = b.srem(rest_item, UT), b.sdiv(rest_item, UT)
        rest_index = k.delinearize(rest_flat, [self.out_shape[d] for d in self.rest]) if self.rest else []
        u0, v0 = b.mul(ut, const_i64(TILE)), b.mul(vt, const_i64(TILE))
        operand = k.pointer(self.op.operands[0])
        out = k.pointer(self.op.result)
        with cooperative.phase() as tid:
            tx, ty = b.urem(tid, const_i64(TILE)), b.udiv(tid, const_i64(TILE))
            for row in range(0, TILE, ROWS):
                v, u = b.add(v0, b.add(ty, const_i64(row))), b.add(u0, tx)
                with if_then(b, b.and_(b.icmp_signed("<", v, V), b.icmp_signed("<", u, U)), "in"):
                    value = b.load(k.element_pointer(operand, self.operand_offset(rest_index, u, v)))
                    b.store(value, b.gep(tile, [b.add(b.mul(b.add(ty, const_i64(row)), const_i64(TILE + 1)), tx)]))
        with cooperative.phase() as tid:
            tx, ty = b.urem(tid, const_i64(TILE)), b.udiv(tid, const_i64(TILE))
            for row in range(0, TILE, ROWS):
                u, v = b.add(u0, b.add(ty, const_i64(row))), b.add(v0, tx)
                with if_then(b, b.and_(b.icmp_signed("<", v, V), b.icmp_signed("<", u, U)), "out"):
                    value = b.load(b.gep(tile, [b.add(b.mul(tx, const_i64(TILE + 1)), b.add(ty, const_i64(row)))]))
                    b.store(value, k.element_pointer(out, k.linearize(self.out_index(rest_index, u, v),
                                                                      self.out_shape)))

    def out_index(self, rest_index: list, u, v) -> list:
        multi = [None] * len(self.out_shape)
        for d, i in zip(self.rest, rest_index):
            multi[d] = i
        multi[self.u_dim], multi[self.v_dim] = u, v
        return multi

    def operand_offset(self, rest_index: list, u, v):
        multi = self.out_index(rest_index, u, v)
        sub = [None] * len(multi)
        for result_dim, operand_dim in enumerate(self.perm):
            sub[operand_dim] = multi[result_dim]
        return self.k.linearize(sub, self.in_shape)
