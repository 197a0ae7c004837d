"""tfc's and XLA's machine code for the elementwise workload, timed in one C harness.

    python -m benchmarks.loop_machine_code
    python -m benchmarks.loop_machine_code --peer-python /tmp/jaxvenv/bin/python --elements 65536,4194304

A jitted JAX call costs ~10 us of dispatch and a ``session.run`` a few more, so at sizes
that stay in cache the Python-level benchmark cannot say whose loop is faster. This one
takes both compilers' kernels out of their runtimes and calls them from the same C
program on one thread, in turns, on the same input:

- tfc: the workload's fused loop from ``tfc.compile`` (its LLVM IR, optimised as the JIT
  does, emitted as an object file), called over the whole range;
- XLA: the object file JAX writes with ``XLA_FLAGS=--xla_dump_to`` (run by ``--peer-python``
  or this Python), called through XLA's CPU kernel ABI (a call frame holding the thread
  dimensions, the workgroup id and the buffers), once per partition.

For the whole expression, ``tanh(x*1.5+0.5)`` alone and ``sigmoid(x)`` alone: the median
nanoseconds per element of each, the ratio, and the largest difference between the two
outputs (a check that the XLA call frame was read as meant). Needs a C compiler (``cc``)
and binutils (``nm``, ``objcopy``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# name: (the TF1 graph, given tf and the placeholder x; the JAX expression, as source)
EXPRESSIONS = {
    "full": (lambda tf, x: tf.tanh(x * 1.5 + 0.5) * tf.sigmoid(x) + x * x,
             "jnp.tanh(x * 1.5 + 0.5) * jax.nn.sigmoid(x) + x * x"),
    "tanh": (lambda tf, x: tf.tanh(x * 1.5 + 0.5), "jnp.tanh(x * 1.5 + 0.5)"),
    "sigmoid": (lambda tf, x: tf.sigmoid(x), "jax.nn.sigmoid(x)"),
}

# what a tfc program links against, done in the caller's thread
RUNTIME_STUBS = r"""
int64_t tfc_pool_threads = 1;
void tfc_parallel_for(void (*task)(void *, int64_t), void *context, int64_t count) {
  for (int64_t i = 0; i < count; i++) task(context, i);
}
"""

_XLA_DUMP = """
import jax, jax.numpy as jnp, numpy as np
x = jnp.asarray(np.zeros({elements}, np.float32))
jax.jit(lambda x: {expression})(x).block_until_ready()
"""

_HARNESS = r"""
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
struct xla_arg { void *data; uint64_t size; };
struct xla_dim { uint64_t x, y, z; };
struct xla_frame { struct xla_dim *dims; struct xla_dim *thread; uint64_t num_args; struct xla_arg *args; };
%(stubs)s
%(declarations)s
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int by_value(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static void run_xla(void *(*kernel)(void *), int partitions, float *in, float *out, long n) {
  struct xla_arg args[2] = {{in, n * 4}, {out, n * 4}};
  struct xla_dim dims = {partitions, 1, 1};
  for (int p = 0; p < partitions; p++) {
    struct xla_dim thread = {p, 0, 0};
    struct xla_frame frame = {&dims, &thread, 2, args};
    kernel(&frame);
  }
}
static double median(double *samples, int count) { qsort(samples, count, sizeof(double), by_value); return samples[count / 2]; }
int main(void) {
  int rounds = %(rounds)d;
  double *tfc_times = malloc(rounds * sizeof(double)), *xla_times = malloc(rounds * sizeof(double));
  printf("[");
%(cases)s
  printf("]\n");
  return 0;
}
"""

_CASE = r"""
  {
    long n = %(elements)d;
    float *in = aligned_alloc(64, n * 4), *a = aligned_alloc(64, n * 4), *b = aligned_alloc(64, n * 4);
    for (long i = 0; i < n; i++) in[i] = 3.0f * sinf(i * 0.001f);
    for (int r = 0; r < rounds; r++) {
      double start = now();
      %(tfc)s(a, in, 0, 0, 0, n);
      tfc_times[r] = now() - start;
      start = now();
      run_xla(%(xla)s, %(partitions)d, in, b, n);
      xla_times[r] = now() - start;
    }
    double difference = 0;
    for (long i = 0; i < n; i++) difference = fmax(difference, fabs((double)a[i] - b[i]));
    printf("%(comma)s{\"name\": \"%(name)s\", \"elements\": %%ld, \"tfc_s\": %%.9g, \"xla_s\": %%.9g, \"max_abs_diff\": %%.3g}",
           n, median(tfc_times, rounds), median(xla_times, rounds), difference);
    fflush(stdout);
    free(in); free(a); free(b);
  }
"""


def _run(command: list, **options) -> str:
    """``command``'s standard output; its standard error in the exception if it fails."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, **options)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])}... failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def tfc_object(name: str, graph, elements: int, directory: str) -> str:
    """The object file of tfc's kernel for ``graph(tf, x)``, its kernel renamed to an external
    ``tfc_<name>_<elements>``; returns that symbol."""
    import llvmlite.binding as llvm

    import tfc
    import tfc.compat.v1 as tf
    from tfc.codegen import jit
    from tfc.codegen.target import host_target

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [elements])
        compiled = tfc.compile(graph(tf, x), feeds=[x])
    text = compiled.result.llvm_ir
    kernels = re.findall(r'define internal i32 @"(k\d+\.[\w.]+)"', text)
    if len(kernels) != 1:
        raise RuntimeError(f"expected one fused kernel for {name}, found {kernels}")
    symbol = f"tfc_{name}_{elements}"
    text = text.replace(f'@"{kernels[0]}"', f'@"{symbol}"').replace(f'define internal i32 @"{symbol}"',
                                                                   f'define i32 @"{symbol}"')
    text = text.replace('define i32 @"tfc_main"', 'define internal i32 @"tfc_main"')
    module = llvm.parse_assembly(text)
    machine = host_target().target_machine(opt=3)
    jit.optimize(module, machine)
    path = os.path.join(directory, f"{symbol}.o")
    with open(path, "wb") as f:
        f.write(machine.emit_object(module))
    return symbol


def xla_object(python: str, name: str, expression: str, elements: int, directory: str) -> tuple:
    """(symbol, partitions) of XLA's kernel for ``expression``, dumped by JAX in ``python``
    and renamed to ``xla_<name>_<elements>``."""
    dump = os.path.join(directory, f"dump_{name}_{elements}")
    environment = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump}", JAX_PLATFORMS="cpu")
    _run([python, "-c", _XLA_DUMP.format(elements=elements, expression=expression)], env=environment)
    objects = [f for f in os.listdir(dump) if "obj-file" in f and f.endswith(".o")]
    if len(objects) != 1:
        raise RuntimeError(f"expected one XLA object file for {expression!r}, found {objects}")
    path = os.path.join(dump, objects[0])
    defined = _run(["nm", "--defined-only", path])
    functions = [line.split()[2] for line in defined.splitlines() if line.split()[1] == "T"]
    if len(functions) != 1:
        raise RuntimeError(f"expected one kernel in {objects[0]}, found {functions}")
    hlo = "".join(open(os.path.join(dump, f)).read() for f in os.listdir(dump) if f.endswith("cpu_after_optimizations.txt"))
    found = re.search(r'outer_dimension_partitions":\["(\d+)"\]', hlo)
    symbol = f"xla_{name}_{elements}"
    _run(["objcopy", f"--redefine-sym={functions[0]}={symbol}", path, os.path.join(directory, f"{symbol}.o")])
    return symbol, int(found.group(1)) if found else 1


def measure(python: str, sizes: list, rounds: int, directory: str) -> list:
    declarations, cases, objects = [], [], []
    for elements in sizes:
        for name, (graph, jax_expression) in EXPRESSIONS.items():
            tfc_symbol = tfc_object(name, graph, elements, directory)
            xla_symbol, partitions = xla_object(python, name, jax_expression, elements, directory)
            declarations += [f"int {tfc_symbol}(float *, const float *, void *, void *, long, long);",
                             f"void *{xla_symbol}(void *);"]
            cases.append(_CASE % {"elements": elements, "tfc": tfc_symbol, "xla": xla_symbol,
                                  "partitions": partitions, "name": name, "comma": "," if cases else ""})
            objects += [f"{tfc_symbol}.o", f"{xla_symbol}.o"]
    source = _HARNESS % {"stubs": RUNTIME_STUBS, "declarations": "\n".join(declarations), "rounds": rounds,
                         "cases": "".join(cases)}
    with open(os.path.join(directory, "harness.c"), "w") as f:
        f.write(source)
    _run(["cc", "-O2", "-no-pie", "-o", "harness", "harness.c", *objects, "-lm"], cwd=directory)
    return json.loads(_run([os.path.join(directory, "harness")]))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", default=sys.executable, help="a Python with jax (default: this one)")
    parser.add_argument("--elements", default="65536,4194304", help="sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=300, help="calls of each kernel per size")
    options = parser.parse_args(argv)
    sizes = [int(s) for s in options.elements.split(",")]
    with tempfile.TemporaryDirectory() as directory:
        results = measure(options.peer_python, sizes, options.rounds, directory)
    print("one thread, median of %d calls each, tfc and XLA in turns" % options.rounds)
    print("| expression | elements | tfc ns/element | XLA ns/element | XLA / tfc | max abs diff |")
    print("|---|--:|--:|--:|--:|--:|")
    for row in results:
        n = row["elements"]
        print(f"| {row['name']} | {n} | {row['tfc_s'] * 1e9 / n:.3f} | {row['xla_s'] * 1e9 / n:.3f} "
              f"| {row['xla_s'] / row['tfc_s']:.2f}x | {row['max_abs_diff']:.1e} |")


if __name__ == "__main__":
    main()
