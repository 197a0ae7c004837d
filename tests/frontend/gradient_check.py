"""The numeric gradient checker shared by the gradient tests: analytic gradients run
compiled in one ``Session.run``, compared with central finite differences in float64."""
import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.op_helper import apply_op

STEP = 1e-6


def op(op_type, *inputs, **attrs):
    """One raw TF op (like gen_math_ops.<op> or gen_nn_ops.<op>)."""
    return apply_op(op_type, list(inputs), attrs).outputs[0]


class GradientChecker:
    """Collects cases, then checks every analytic gradient against central finite
    differences: of ``ref`` (a numpy version of the case's function) when the case gives
    one, else of the case's forward graph run compiled."""

    def __init__(self, seed=0):
        self.rng = np.random.RandomState(seed)
        self.cases = []

    def add(self, name, fn, inputs, diff=None, shapes=None, out_shapes=None, ref=None, tol=1e-6):
        """``fn(*placeholders)`` -> tensor or list of tensors; ``diff``: indices of the
        inputs to differentiate (default: every float input); ``shapes``: placeholder
        shapes (default: the arrays' shapes); ``out_shapes``: the outputs' run-time
        shapes when their static shapes are not fully defined; ``ref(*arrays)`` -> the
        outputs in numpy."""
        inputs = [np.asarray(a) for a in inputs]
        if diff is None:
            diff = [i for i, a in enumerate(inputs) if a.dtype.kind == "f"]
        with tf.name_scope(name):
            phs = [tf.placeholder(tf.as_dtype(a.dtype), shape=a.shape if shapes is None else shapes[i],
                                  name=f"x{i}") for i, a in enumerate(inputs)]
            outs = fn(*phs)
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            weights, feeds, terms = [], {}, []
            for k, out in enumerate(outs):
                shape = out.shape.as_list() if out_shapes is None else out_shapes[k]
                w = self.rng.uniform(0.5, 1.5, size=shape) * self.rng.choice([-1, 1], size=shape)
                w = w.astype(out.dtype.as_numpy_dtype)
                w_ph = tf.placeholder(out.dtype, shape=out.shape, name=f"w{k}")
                feeds[w_ph] = w
                weights.append(w)
                terms.append(tf.reduce_sum(out * w_ph))
            y = terms[0] if len(terms) == 1 else tf.add_n(terms)
        grads = tf.gradients(y, [phs[i] for i in diff])
        for g, i in zip(grads, diff):
            assert g is not None, f"{name}: no gradient for input {i}"
        for ph, a in zip(phs, inputs):
            feeds[ph] = a
        loss = None
        if ref is not None:
            def loss(*arrays):
                outs = ref(*arrays)
                outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
                return sum(float(np.sum(np.asarray(o) * w)) for o, w in zip(outs, weights))
        self.cases.append(dict(name=name, y=y, grads=grads, phs=phs, inputs=inputs, diff=diff, feeds=feeds,
                               tol=tol, loss=loss))

    def _numeric_with_numpy(self, case):
        out = []
        for i in case["diff"]:
            values = [a.copy() for a in case["inputs"]]
            grad = np.zeros(values[i].shape)
            for k in range(values[i].size):
                flat = values[i].reshape(-1)
                base = flat[k]
                flat[k] = base + STEP
                plus = case["loss"](*values)
                flat[k] = base - STEP
                minus = case["loss"](*values)
                flat[k] = base
                grad.reshape(-1)[k] = (plus - minus) / (2 * STEP)
            out.append(grad)
        return out

    def _numeric_compiled(self, sess, cases, feeds):
        """Each step perturbs one element of every case (the cases are independent)."""
        ys = [case["y"] for case in cases]
        numeric = [[np.zeros(case["inputs"][i].shape) for i in case["diff"]] for case in cases]
        positions = [[(j, k) for j, i in enumerate(case["diff"]) for k in range(case["inputs"][i].size)]
                     for case in cases]
        for step in range(max(len(p) for p in positions)):
            values = {}
            for sign in (1, -1):
                run_feeds = dict(feeds)
                for case, pos in zip(cases, positions):
                    if step < len(pos):
                        j, k = pos[step]
                        ph = case["phs"][case["diff"][j]]
                        x = run_feeds[ph].copy()
                        x.reshape(-1)[k] += sign * STEP
                        run_feeds[ph] = x
                values[sign] = sess.run(ys, run_feeds)
            for c, (case, pos) in enumerate(zip(cases, positions)):
                if step < len(pos):
                    j, k = pos[step]
                    numeric[c][j].reshape(-1)[k] = (values[1][c] - values[-1][c]) / (2 * STEP)
        return numeric

    def check(self):
        feeds = {}
        for case in self.cases:
            feeds.update(case["feeds"])
        all_grads = [g for case in self.cases for g in case["grads"]]
        compiled_cases = [case for case in self.cases if case["loss"] is None]
        with tf.Session() as sess:
            analytic = sess.run(all_grads, feeds)
            numeric_compiled = self._numeric_compiled(sess, compiled_cases, feeds) if compiled_cases else []
            stats = sess.cache_stats()
        assert stats["compiles"] == (2 if compiled_cases else 1), stats
        compiled = iter(numeric_compiled)
        it = iter(analytic)
        for case in self.cases:
            numeric = next(compiled) if case["loss"] is None else self._numeric_with_numpy(case)
            for j, i in enumerate(case["diff"]):
                got = next(it)
                assert got.shape == case["inputs"][i].shape, (case["name"], i, got.shape)
                np.testing.assert_allclose(got, numeric[j], rtol=case["tol"], atol=case["tol"],
                                           err_msg=f"{case['name']}: input {i}")


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def rand(rng, *shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape)
