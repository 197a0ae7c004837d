"""The models of the compile-time benchmark (``python -m benchmarks --compile``), one builder
per peer, all starting from the same numpy parameters so that their first-step losses
can be compared with numpy's.

- ``mlp``: a stack of L dense 64->64 relu layers with a layer norm after every 4th layer,
  a dense 64->10 logits layer, softmax cross entropy (mean over the batch), Adam
  (learning rate 1e-3); batch 32. One step: ``sess.run([train_op, loss])``.
- ``chain``: y = sin(y) + 1, N times, from x (64 elements); one step computes dy/dx
  (``tf.gradients``, ``GradientTape``, ``jax.grad`` of the sum).

Each ``build_<peer>(kind, size)`` returns a :class:`Built`: the time the graph (or the
traced function's setup) took, a zero-argument ``step`` returning the checked value (the
loss, or the gradient), and a ``graph_ops`` callable (the graph's op count, the traced
function's op count, or the jaxpr's equation count; called after the first step).
Nothing here imports numpy, tensorflow or jax at module level.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

WIDTH = 64
CLASSES = 10
BATCH = 32
CHAIN_WIDTH = 64
LEARNING_RATE = 1e-3
EPSILON = 1e-5  # layer norm
ADAM = (0.9, 0.999, 1e-8)  # beta1, beta2, epsilon (TF's defaults)


def is_norm_layer(i: int) -> bool:
    """A layer norm follows dense layers 3, 7, 11, ... (every 4th)."""
    return i % 4 == 3


@dataclass
class Built:
    build_s: float  # graph construction (incl. tf.gradients and the optimizer), or setup
    step: Callable  # one step; returns the loss (mlp) or the gradient (chain) as numpy
    graph_ops: Callable  # () -> int
    init_s: float = 0.0  # variable initialisation run (TF1 sessions), not in the first step
    session: object = None  # the TF1 Session (tfc's: its cache holds the compile timings)


# -- data and parameters ---------------------------------------------------------------------
def mlp_data(L: int, seed: int = 0) -> dict:
    """Parameters (dense kernels/biases, layer-norm gammas/betas, logits), inputs, labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    dense = [((rng.standard_normal((WIDTH, WIDTH)) * np.sqrt(2.0 / WIDTH)).astype(np.float32),
              (rng.standard_normal(WIDTH) * 0.01).astype(np.float32)) for _ in range(L)]
    norms = {i: ((1 + 0.1 * rng.standard_normal(WIDTH)).astype(np.float32),
                 (0.1 * rng.standard_normal(WIDTH)).astype(np.float32)) for i in range(L) if is_norm_layer(i)}
    logits = ((rng.standard_normal((WIDTH, CLASSES)) * np.sqrt(1.0 / WIDTH)).astype(np.float32),
              np.zeros(CLASSES, np.float32))
    x = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    labels = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, BATCH)]
    return {"dense": dense, "norms": norms, "logits": logits, "x": x, "labels": labels}


def chain_data(seed: int = 0):
    import numpy as np

    return np.random.default_rng(seed).uniform(-1, 1, CHAIN_WIDTH).astype(np.float32)


def reference(kind: str, size: int, seed: int = 0):
    """numpy's value of the first step: the initial loss (mlp) or dy/dx (chain), float64."""
    import numpy as np

    if kind == "chain":
        y = chain_data(seed).astype(np.float64)
        grad = np.ones_like(y)
        for _ in range(size):
            grad *= np.cos(y)
            y = np.sin(y) + 1.0
        return grad
    data = mlp_data(size, seed)
    h = data["x"].astype(np.float64)
    for i, (w, b) in enumerate(data["dense"]):
        h = np.maximum(h @ w + b, 0)
        if is_norm_layer(i):
            gamma, beta = data["norms"][i]
            mean = h.mean(-1, keepdims=True)
            var = ((h - mean) ** 2).mean(-1, keepdims=True)
            h = (h - mean) / np.sqrt(var + EPSILON) * gamma + beta
    w, b = data["logits"]
    z = h @ w + b
    z = z - z.max(-1, keepdims=True)
    log_softmax = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return np.float64(-(data["labels"] * log_softmax).sum(-1).mean())


# -- TF1 sessions (tfc and TF graph mode) -----------------------------------------------------
def _dense(tf, h, w, b, activation, name):
    """``tf.layers.dense`` where the API has it (tfc); TF 2.16+ with Keras 3 has no
    tf.compat.v1.layers, so there the same MatMul + BiasAdd (+ Relu) with get_variable."""
    kernel_init, bias_init = tf.constant_initializer(w), tf.constant_initializer(b)
    try:
        return tf.layers.dense(h, w.shape[1], activation=activation, kernel_initializer=kernel_init,
                               bias_initializer=bias_init, name=name)
    except (AttributeError, ImportError):
        pass
    with tf.variable_scope(name):
        kernel = tf.get_variable("kernel", w.shape, initializer=kernel_init)
        bias = tf.get_variable("bias", b.shape, initializer=bias_init)
    out = tf.nn.bias_add(tf.matmul(h, kernel), bias)
    return activation(out) if activation is not None else out


def tf1_mlp(tf, data):
    """(train_op, loss, feed_dict) in the current default graph."""
    x = tf.placeholder(tf.float32, [None, WIDTH], name="x")
    labels = tf.placeholder(tf.float32, [None, CLASSES], name="labels")
    h = x
    for i, (w, b) in enumerate(data["dense"]):
        h = _dense(tf, h, w, b, tf.nn.relu, f"dense{i}")
        if is_norm_layer(i):
            gamma0, beta0 = data["norms"][i]
            with tf.variable_scope(f"layer_norm{i}"):
                gamma = tf.get_variable("gamma", [WIDTH], initializer=tf.constant_initializer(gamma0))
                beta = tf.get_variable("beta", [WIDTH], initializer=tf.constant_initializer(beta0))
                mean, var = tf.nn.moments(h, axes=[1], keep_dims=True)
                h = (h - mean) * tf.rsqrt(var + EPSILON) * gamma + beta
    logits = _dense(tf, h, *data["logits"], None, "logits")
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
    beta1, beta2, eps = ADAM
    train = tf.train.AdamOptimizer(LEARNING_RATE, beta1, beta2, eps).minimize(loss)
    return train, loss, {x: data["x"], labels: data["labels"]}


def tf1_chain(tf, size: int, x0):
    x = tf.placeholder(tf.float32, [CHAIN_WIDTH], name="x")
    y = x
    for _ in range(size):
        y = tf.sin(y) + 1.0
    (grad,) = tf.gradients(y, x)
    return grad, {x: x0}


def _tf1_build(tf, kind: str, size: int, seed: int, config=None) -> Built:
    data = mlp_data(size, seed) if kind == "mlp" else chain_data(seed)
    graph = tf.Graph()
    start = time.perf_counter()
    with graph.as_default():
        if kind == "mlp":
            train, loss, feed = tf1_mlp(tf, data)
            fetches = [train, loss]
        else:
            grad, feed = tf1_chain(tf, size, data)
            fetches = [grad]
        init = tf.global_variables_initializer()
    build_s = time.perf_counter() - start
    session = tf.Session(graph=graph, config=config) if config is not None else tf.Session(graph=graph)
    start = time.perf_counter()
    session.run(init)
    init_s = time.perf_counter() - start

    def step():
        return session.run(fetches, feed)[-1]

    return Built(build_s, step, lambda: len(graph.get_operations()), init_s, session)


def build_tfc(kind: str, size: int, seed: int = 0) -> Built:
    import tfc.compat.v1 as tf

    return _tf1_build(tf, kind, size, seed)


def build_tf_graph(kind: str, size: int, seed: int = 0) -> Built:
    from . import peers

    tf1 = peers.import_tensorflow().compat.v1
    tf1.disable_eager_execution()
    return _tf1_build(tf1, kind, size, seed, peers.tf_session_config(tf1))


# -- TF XLA -----------------------------------------------------------------------------------
def build_tf_xla(kind: str, size: int, seed: int = 0) -> Built:
    from . import peers

    tf = peers.import_tensorflow()
    start = time.perf_counter()
    if kind == "chain":
        x = tf.constant(chain_data(seed))

        @tf.function(jit_compile=True)
        def fn(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = x
                for _ in range(size):
                    y = tf.sin(y) + 1.0
            return tape.gradient(y, x)

        args = (x,)
    else:
        data = mlp_data(size, seed)
        params = [p for w_b in data["dense"] for p in w_b]
        for i in sorted(data["norms"]):
            params += list(data["norms"][i])
        params += list(data["logits"])
        variables = [tf.Variable(p) for p in params]
        slots = [(tf.Variable(tf.zeros_like(p)), tf.Variable(tf.zeros_like(p))) for p in params]
        step_count = tf.Variable(0.0)
        L = len(data["dense"])
        norm_index = {i: 2 * L + 2 * k for k, i in enumerate(sorted(data["norms"]))}
        beta1, beta2, eps = ADAM

        def loss_fn(x, labels):
            h = x
            for i in range(L):
                h = tf.nn.relu(tf.matmul(h, variables[2 * i]) + variables[2 * i + 1])
                if is_norm_layer(i):
                    gamma, beta = variables[norm_index[i]], variables[norm_index[i] + 1]
                    mean, var = tf.nn.moments(h, axes=[1], keepdims=True)
                    h = (h - mean) * tf.math.rsqrt(var + EPSILON) * gamma + beta
            logits = tf.matmul(h, variables[-2]) + variables[-1]
            return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))

        @tf.function(jit_compile=True)
        def fn(x, labels):
            with tf.GradientTape() as tape:
                loss = loss_fn(x, labels)
            grads = tape.gradient(loss, variables)
            t = step_count.assign_add(1.0)
            lr = LEARNING_RATE * tf.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
            for v, (m, s), g in zip(variables, slots, grads):
                m.assign(beta1 * m + (1 - beta1) * g)
                s.assign(beta2 * s + (1 - beta2) * g * g)
                v.assign_sub(lr * m / (tf.sqrt(s) + eps))
            return loss

        args = (tf.constant(data["x"]), tf.constant(data["labels"]))
    build_s = time.perf_counter() - start

    def graph_ops():
        return len(fn.get_concrete_function(*args).graph.get_operations())

    return Built(build_s, lambda: fn(*args).numpy(), graph_ops)


# -- JAX --------------------------------------------------------------------------------------
def build_jax(kind: str, size: int, seed: int = 0) -> Built:
    from . import peers

    jax = peers.import_jax()
    jnp = jax.numpy
    start = time.perf_counter()
    if kind == "chain":
        def chain(x):
            y = x
            for _ in range(size):
                y = jnp.sin(y) + 1.0
            return y.sum()

        fn = jax.jit(jax.grad(chain))
        x = jax.device_put(chain_data(seed))
        build_s = time.perf_counter() - start

        def step():
            return jax.device_get(fn(x))

        return Built(build_s, step, lambda: len(jax.make_jaxpr(jax.grad(chain))(x).eqns))

    data = mlp_data(size, seed)
    L = len(data["dense"])
    highest = jax.lax.Precision.HIGHEST
    params = {"dense": data["dense"], "norms": {str(i): v for i, v in data["norms"].items()},
              "logits": data["logits"]}
    beta1, beta2, eps = ADAM

    def loss_fn(params, x, labels):
        h = x
        for i in range(L):
            w, b = params["dense"][i]
            h = jax.nn.relu(jnp.matmul(h, w, precision=highest) + b)
            if is_norm_layer(i):
                gamma, beta = params["norms"][str(i)]
                mean = h.mean(-1, keepdims=True)
                var = ((h - mean) ** 2).mean(-1, keepdims=True)
                h = (h - mean) * jax.lax.rsqrt(var + EPSILON) * gamma + beta
        w, b = params["logits"]
        logits = jnp.matmul(h, w, precision=highest) + b
        return jnp.mean(-jnp.sum(labels * jax.nn.log_softmax(logits, axis=-1), axis=-1))

    def train(state, x, labels):
        params, m, v, t = state
        loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
        t = t + 1.0
        m = jax.tree_util.tree_map(lambda a, g: beta1 * a + (1 - beta1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda a, g: beta2 * a + (1 - beta2) * g * g, v, grads)
        lr = LEARNING_RATE * jnp.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        params = jax.tree_util.tree_map(lambda p, a, b: p - lr * a / (jnp.sqrt(b) + eps), params, m, v)
        return (params, m, v, t), loss

    def zeros():
        return jax.tree_util.tree_map(jnp.zeros_like, params)

    state = [(jax.device_put(params), zeros(), zeros(), jnp.float32(0.0))]
    x, labels = jax.device_put(data["x"]), jax.device_put(data["labels"])
    fn = jax.jit(train, donate_argnums=0)
    build_s = time.perf_counter() - start

    def step():
        state[0], loss = fn(state[0], x, labels)
        return jax.device_get(loss)

    return Built(build_s, step, lambda: len(jax.make_jaxpr(train)(state[0], x, labels).jaxpr.eqns))


BUILDERS = {"tfc": build_tfc, "tf_graph": build_tf_graph, "tf_xla": build_tf_xla, "jax": build_jax}
