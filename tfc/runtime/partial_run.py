"""``Session.partial_run_setup`` / ``partial_run``: one step run in pieces (TF 1.x).

A partial run is set up with every tensor it will fetch and every tensor it will be fed;
each ``partial_run`` call then feeds some of them and fetches others, and every op of the
step runs at most once across the calls, as TF's executor runs each node of a partial
run once. tfc runs each call as an ordinary step of its session (compiled and cached like
any other) and carries the step's state from call to call as values: a call also fetches
the *frontier* of what it ran — the tensors it computed that ops still to run will
consume — and later calls feed them back, so the ops behind them do not run again.

Ops that compute nothing (variables, resource handles, constants) are not carried: a later
call uses them again, as a variable's ref must reach the op that assigns it. An op that
ran in an earlier call and is a *control* input of an op still to run cannot be fed back;
such a partial run is refused (UnimplementedError naming both ops) rather than running the
op twice. Errors are TF's: a fetch or feed not named at setup, fetched or fed twice, a
fetch that needs a feed not given yet (InvalidArgumentError), an op fetched in a call
(RuntimeError), a handle whose fetches are all done ("Must run 'setup' ...").
"""
from __future__ import annotations

import itertools

from tfc.frontend import errors
from tfc.frontend.graph import Tensor

from .fetch import FetchPlan

# Ops a later call may run again: they compute nothing (their outputs are buffers or values).
_REUSABLE_OPS = frozenset(("Const", "VariableV2", "Variable", "VarHandleOp", "TemporaryVariable", "Placeholder",
                           "PlaceholderWithDefault", "NoOp"))
_HANDLES = itertools.count(1)


class PartialRun:
    """The state of one partial run of ``session``."""

    def __init__(self, session, fetches, feeds):
        from .session import _feed_tensor

        plan = FetchPlan(session.graph, fetches)
        self.session = session
        self.handle = f"{next(_HANDLES)};{id(self):x}"
        self.fetches = list(plan.tensors)
        self.targets = list(plan.ops)
        self.feeds = [_feed_tensor(session.graph, key) for key in (feeds or [])]
        both = set(self.fetches) & set(self.feeds)
        if both:
            raise errors.InvalidArgumentError(None, None, f"{min(t.name for t in both)} is both fed and fetched.")
        self.fed: dict = {}  # fed tensor -> value
        self.carried: dict = {}  # tensor computed by an earlier call -> value
        self.fetched: set = set()
        self.ran: set = set()  # ops that ran in earlier calls (not the reusable ones)
        self.targets_left = list(self.targets)

    @property
    def done(self) -> bool:
        return len(self.fetched) == len(self.fetches)

    def run(self, fetches, feed_dict):
        from .session import _feed_tensor

        plan = FetchPlan(self.session.graph, fetches)
        if plan.ops:
            raise RuntimeError("partial_run() requires empty `target_list`. Received: target_list="
                               f"{plan.ops} (non-empty)")
        setup_fetches, setup_feeds = set(self.fetches), set(self.feeds)
        for tensor in plan.tensors:
            if tensor not in setup_fetches:
                raise errors.InvalidArgumentError(None, None,
                                                  f"The fetch {tensor.name} was not specified in partial_run_setup.")
            if tensor in self.fetched:
                raise errors.InvalidArgumentError(None, None, f"The fetch {tensor.name} has already been fetched.")
        new_feeds = {}
        for key, value in (feed_dict or {}).items():
            tensor = _feed_tensor(self.session.graph, key)
            if tensor not in setup_feeds:
                raise errors.InvalidArgumentError(None, None,
                                                  f"The feed {tensor.name} was not specified in partial_run_setup.")
            if tensor in self.fed:
                raise errors.InvalidArgumentError(None, None, f"The feed {tensor.name} has already been fed.")
            new_feeds[tensor] = value
        known = dict(self.carried)
        known.update(self.fed)
        known.update(new_feeds)
        to_run = self._ops_behind(plan.tensors, known, setup_feeds, strict=True)
        ready_targets = [op for op in self.targets_left
                         if self._ops_behind([op], known, setup_feeds, strict=False) is not None]
        for op in ready_targets:
            to_run |= self._ops_behind([op], known, setup_feeds, strict=False)
        frontier = self._frontier(to_run, known, set(plan.tensors))
        used = self._fed_inputs(to_run, known) + [t for t in plan.tensors if t in known]
        values = self.session.run(list(plan.tensors) + frontier + ready_targets,
                                  {t: known[t] for t in used}) if (plan.tensors or ready_targets) else []
        self.fed.update(new_feeds)
        self.ran |= {op for op in to_run if op.type not in _REUSABLE_OPS}
        self.fetched.update(plan.tensors)
        self.targets_left = [op for op in self.targets_left if op not in ready_targets]
        results = values[:len(plan.tensors)]
        self.carried.update(zip(frontier, values[len(plan.tensors):len(plan.tensors) + len(frontier)]))
        return plan.build(results)

    # -- the graph walks ----------------------------------------------------------------------
    def _ops_behind(self, roots: list, known: dict, setup_feeds: set, strict: bool):
        """The ops a call must run for ``roots`` (tensors or ops), stopping at known tensors
        and at ops that ran; a setup feed not fed yet raises (``strict``) or gives None."""
        needed: set = set()
        stack = [r.op if isinstance(r, Tensor) else r for r in roots if not (isinstance(r, Tensor) and r in known)]
        while stack:
            op = stack.pop()
            if op in needed:
                continue
            if op in self.ran:
                continue
            needed.add(op)
            for tensor in op.inputs:
                if tensor in known:
                    continue
                if tensor in setup_feeds:
                    if not strict:
                        return None
                    raise errors.InvalidArgumentError(
                        None, None, f"Fetch {tensor.name} can't be computed from the feeds that have been fed so far.")
                if tensor.op in self.ran:
                    raise errors.InternalError(None, None, f"partial_run lost the value of {tensor.name}")
                stack.append(tensor.op)
            for control in op.control_inputs:
                if control in self.ran:
                    raise errors.UnimplementedError(
                        None, op, f"tfc's partial runs cannot run '{op.name}' after its control input "
                                  f"'{control.name}' ran in an earlier partial_run call (it would run again)")
                stack.append(control)
        return needed

    def _closure(self) -> set:
        """Every op the setup's fetches and targets may run."""
        seen: set = set()
        stack = [t.op for t in self.fetches] + list(self.targets)
        feeds = set(self.feeds)
        while stack:
            op = stack.pop()
            if op in seen:
                continue
            seen.add(op)
            stack.extend(t.op for t in op.inputs if t not in feeds)
            stack.extend(op.control_inputs)
        return seen

    def _frontier(self, to_run: set, known: dict, fetching: set) -> list:
        """Outputs of ``to_run`` that ops still to run will consume, and setup fetches they
        compute that a later call will fetch (carried to later calls)."""
        later = self._closure() - to_run - self.ran
        frontier = [t for t in self.fetches if t.op in to_run and t not in self.fetched and t not in fetching
                    and t not in known]
        for op in later:
            for tensor in op.inputs:
                producer = tensor.op
                if producer in to_run and producer.type not in _REUSABLE_OPS and tensor not in known \
                        and tensor not in frontier:
                    frontier.append(tensor)
        return sorted(frontier, key=lambda t: t.name)

    @staticmethod
    def _fed_inputs(to_run: set, known: dict) -> list:
        """The known tensors the ops of this call read."""
        used = []
        for op in to_run:
            for tensor in op.inputs:
                if tensor in known and tensor not in used:
                    used.append(tensor)
        return used
