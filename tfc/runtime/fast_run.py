"""The repeated-run fast path of ``Session.run``.

A training loop calls ``sess.run`` with the same fetch structure and feed keys millions of
times. After the first such run has planned and compiled the step, a ``FastRun`` does only
what a repeat needs: convert the feed values, fill the program's arguments, call it, and
shape the results. It applies to a step with no host ops, no fed fetches, no
``IsVariableInitialized`` answers and one compiled CPU program; it declines (returns
``MISS``) whenever a run is not a plain repeat -- a feed of another shape or type, an
uninitialised variable, a GPU copy of the variables -- and the general path then runs it,
with the same errors.

What it saves over the general path (see ``benchmarks/workloads/scalar_add.py``):
- feeds of a small static shape are copied into buffers it keeps (their addresses are
  set once) instead of becoming new arrays whose addresses are looked up on every run;
- 0-d results, which reach the user as numpy scalars, are written into buffers it keeps;
- its own call context (slots, dims, arena) stays bound to those buffers.

When all of a step's feeds are kept, all its results are 0-d and it touches no variable,
a repeat after one checked run is a direct call (``_direct``): values of exactly each
feed's type and shape are copied in and the program is called, with no conversion, no
shape binding and no argument slots to fill (the scalar add: 3.3-3.9 us per
``session.run`` on a quiet machine, 6.0-6.4 us through the checks). Any other value goes
the checked way, with TF's conversions and errors.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .executable import Executable, _address
from .fetch import to_fetch_value

MISS = object()  # a run the fast path does not take
SMALL_FEED_BYTES = 4096  # feeds up to this size are copied into a kept buffer


class FastRun:
    """Runs one plan's single compiled step again (``__call__(session, feed_dict)``)."""

    def __init__(self, plan, step):
        self.plan = plan
        self.step = step
        executable: Executable = step.executable
        self.executable = executable
        self.feeders = plan.feeders
        self.native_positions = plan.native_feed_positions
        # Every feed is checked against its feeder's rank and known dims once per new shape
        # tuple; the compiled step holds for shapes with the same dims equal to 1.
        self.shapes: Optional[tuple] = None
        self.context = executable._new_context()  # this fast path's own: slots stay bound
        self.entry = executable.code.entry
        self.kept_feeds = self._kept_feeds()
        # per feed: (its feeder, numpy dtype, the kept buffer the program reads it from or None)
        self.feed_plan = [(feeder, np.dtype(feeder.np_dtype), None) for feeder in self.feeders]
        for i, position in enumerate(self.native_positions):
            feeder, dtype, _ = self.feed_plan[position]
            self.feed_plan[position] = (feeder, dtype, self.kept_feeds[i])
        self.kept_outputs = self._kept_outputs()
        self.refs = [(len(step.feeds) + i, slot) for i, slot in enumerate(step.refs)]
        self.args: list = [None] * (len(step.feeds) + len(step.refs))
        self.single = plan.single_tensor
        # per feed (buffer, numpy scalar type or None, dtype, shape) when a repeat can be a
        # direct call (see _direct), else None; the direct call is ready after one checked run
        self.direct_feeds = self._direct_feeds()
        self.direct_ready = False

    def _kept_feeds(self) -> list:
        """Per native feed: a kept buffer when its compiled shape is static and small, else None."""
        kept = []
        for position, (name, elem, shape, is_ref) in enumerate(self.executable.signature.args[:len(self.step.feeds)]):
            buffer = None
            if all(isinstance(d, int) for d in shape) and \
                    int(np.prod(shape, dtype=np.int64)) * elem.np_dtype.itemsize <= SMALL_FEED_BYTES:
                buffer = np.empty(shape, dtype=elem.np_dtype)
                self.context.cache[position] = (buffer, _address(buffer))
            kept.append(buffer)
        return kept

    def _kept_outputs(self) -> tuple:
        """Per result: a kept 0-d buffer (the user gets a numpy scalar copy of it), else None."""
        kept = []
        num_args = len(self.executable.args)
        for j, (elem, shape) in enumerate(self.executable.signature.results):
            buffer = None
            if len(shape) == 0:
                buffer = np.empty((), dtype=elem.np_dtype)
                self.context.slots[num_args + j] = _address(buffer)
            kept.append(buffer)
        return tuple(kept)

    def _direct_feeds(self) -> Optional[list]:
        """What a direct call needs to copy the feeds in, when it can apply: no variables,
        every feed fed to the program and kept (a small static shape), every result 0-d."""
        positions = list(self.native_positions)
        if self.refs or positions != list(range(len(self.feeders))):
            return None
        if any(buffer is None for buffer in self.kept_feeds + list(self.kept_outputs)):
            return None
        return [(buffer, buffer.dtype.type if buffer.ndim == 0 else None, buffer.dtype, buffer.shape)
                for buffer in self.kept_feeds]

    def __call__(self, session, feed_dict):
        if self.direct_ready:  # (no variables: where their newest copies live does not matter)
            result = self._direct(session, feed_dict)
            if result is not MISS:
                return result
        values = session._variables.values
        if values.device is not None:  # a GPU step ran: the variables' copies need syncing
            return MISS
        step = self.step
        args = self.args
        with session._lock:  # (the kept buffers are this session's: one run at a time fills them)
            if feed_dict and not self._bind_feeds(feed_dict):
                return MISS
            session.stats["runs"] += 1
            for position, slot in self.refs:
                args[position] = session._ref_buffer(slot, step)
            with step.lock:
                outputs = self._call(args)
            self.direct_ready = self.direct_feeds is not None
            session.stats["cache_hits"] += 1
            for position, name in step.written_variables:
                values[name] = args[position]
            if self.single:
                return to_fetch_value(outputs[0])
            results = [to_fetch_value(v) for v in outputs]
        return self.plan.fetch_plan.build(results)

    def _direct(self, session, feed_dict):
        """A repeat of a checked run whose feeds all live in kept buffers and whose results
        are all 0-d: the context's argument slots, dims and arena still hold, so the feeds
        are copied in (values of exactly the feed's type and shape; anything else goes the
        checked way) and the program is called. MISS, with nothing run, otherwise."""
        context = self.context
        with session._lock:
            for (buffer, scalar_type, dtype, shape), value in zip(self.direct_feeds, (feed_dict or {}).values()):
                kind = value.__class__
                if kind is scalar_type or (kind is np.ndarray and value.dtype is dtype and value.shape == shape):
                    buffer[...] = value
                else:
                    return MISS
            session.stats["runs"] += 1
            with self.step.lock:
                status = self.entry(context.slots, context.dims)
                context.runs += 1
            if status != 0:
                self.executable._raise(status, context.error)
            session.stats["cache_hits"] += 1
            if self.single:
                return self.kept_outputs[0][()]
            results = [buffer[()] for buffer in self.kept_outputs]
        return self.plan.fetch_plan.build(results)

    def _bind_feeds(self, feed_dict) -> bool:
        """Put the feed values in the program's arguments; False when the general path must see them."""
        arrays = []
        for (feeder, dtype, buffer), value in zip(self.feed_plan, feed_dict.values()):
            kind = value.__class__
            if kind is np.ndarray and value.dtype is dtype:
                array = value if buffer is not None or value.flags.c_contiguous else feeder.convert(value)
            elif kind is dtype.type:  # a numpy scalar of the feed's type
                array = value
            else:
                array = feeder.convert(value)  # TF's conversion rules and errors
            arrays.append(array)
        shapes = tuple([array.shape for array in arrays])
        if shapes != self.shapes:
            if not self._fits(arrays, shapes):
                return False
            self.shapes = shapes
        args = self.args
        for i, position in enumerate(self.native_positions):
            buffer = self.feed_plan[position][2]
            if buffer is not None:
                buffer[...] = arrays[position]
                args[i] = buffer
            elif arrays[position].__class__ is np.ndarray:
                args[i] = arrays[position]
            else:
                args[i] = np.asarray(arrays[position])
        return True

    def _fits(self, arrays: list, shapes: tuple) -> bool:
        """Whether these feed shapes are valid (TF's feed check) and compiled as this step."""
        for feeder, array in zip(self.feeders, arrays):
            if feeder.rank is not None and (len(array.shape) != feeder.rank or
                                            any(array.shape[i] != d for i, d in feeder.known)):
                return False
        used = [shapes[i] for i in self.native_positions]
        shape_key = tuple([tuple([d == 1 for d in shape]) for shape in used])
        if self.plan.steps.get(shape_key) is not self.step:
            return False
        return all(buffer is None or buffer.shape == shape for buffer, shape in zip(self.kept_feeds, used))

    def _call(self, args: list) -> list:
        outputs = self.executable.run_on(args, self.context, self.kept_outputs)
        if outputs is None:  # a call on another context explains what does not fit
            return self.executable.run(args)
        return outputs


def fast_run_for(session, plan) -> Optional[FastRun]:
    """A FastRun for ``plan`` when its runs can take the fast path, else None."""
    host = plan.host
    if session._remote is not None or host is None or not host.trivial or host.middle:
        return None
    if plan.initialized_checks or plan.fed_fetches or len(plan.steps) != 1:
        return None
    if any(feeder.is_string for feeder in plan.feeders):
        return None
    step = next(iter(plan.steps.values()))
    if step.target != "cpu" or step.executable.host_calls is not None:
        return None
    return FastRun(plan, step)
