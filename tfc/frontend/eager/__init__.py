"""Eager execution for the TF1 API (``tf.enable_eager_execution``): ops run at once on
compiled per-op kernels (execute.py), GradientTape (tape.py), eager variables
(variables.py) and ``defun`` / ``tf.function`` (function.py). See context.py for how eager
mode and graph mode coexist."""
from __future__ import annotations

from ..variables import _EAGER_VARIABLE_CLASS
from . import execute, tape
from .context import (EagerGraph, disable_eager_execution, eager_mode, enable_eager_execution, executing_eagerly,
                      executing_eagerly_outside_functions)
from .function import Function, TensorSpec, defun, function
from .tape import GradientTape
from .tensor import EagerOperation, EagerTensor
from .variables import EagerVariable, make_variable_class

__all__ = ["EagerGraph", "EagerOperation", "EagerTensor", "EagerVariable", "Function", "GradientTape", "TensorSpec",
           "defun", "disable_eager_execution", "eager_mode", "enable_eager_execution", "execute",
           "executing_eagerly", "executing_eagerly_outside_functions", "function", "tape"]

if make_variable_class not in _EAGER_VARIABLE_CLASS:
    _EAGER_VARIABLE_CLASS.append(make_variable_class)


def num_gpus() -> int:
    """tfe.num_gpus(): GPUs eager ops could use (tfc runs eager kernels on the CPU)."""
    return 0


def run(main=None, argv=None):
    """tfe.run: enable eager execution, then tf.app.run(main)."""
    from ..app import run as app_run

    enable_eager_execution()
    return app_run(main, argv)


def implicit_gradients(f):
    """tfe.implicit_gradients: f's gradients for the variables it reads, as (grad, var)."""
    def grad_fn(*args, **kwargs):
        with GradientTape() as t:
            value = f(*args, **kwargs)
        variables = list(t.watched_variables())
        return list(zip(t.gradient(value, variables), variables))

    return grad_fn


def implicit_value_and_gradients(f):
    def grad_fn(*args, **kwargs):
        with GradientTape() as t:
            value = f(*args, **kwargs)
        variables = list(t.watched_variables())
        return value, list(zip(t.gradient(value, variables), variables))

    return grad_fn


def gradients_function(f, params=None):
    """tfe.gradients_function: a function returning d f / d (its positional arguments)."""
    def grad_fn(*args, **kwargs):
        from ..convert import convert_to_tensor

        with GradientTape() as t:
            tensors = [convert_to_tensor(a) for a in args]
            chosen = range(len(tensors)) if params is None else params
            for i in chosen:
                t.watch(tensors[i])
            value = f(*tensors, **kwargs)
        return t.gradient(value, [tensors[i] for i in chosen])

    return grad_fn


def value_and_gradients_function(f, params=None):
    def grad_fn(*args, **kwargs):
        from ..convert import convert_to_tensor

        with GradientTape() as t:
            tensors = [convert_to_tensor(a) for a in args]
            chosen = range(len(tensors)) if params is None else params
            for i in chosen:
                t.watch(tensors[i])
            value = f(*tensors, **kwargs)
        return value, t.gradient(value, [tensors[i] for i in chosen])

    return grad_fn


# tf.* names (the TF1 namespace)
TF_EXPORTS = {
    "enable_eager_execution": enable_eager_execution, "disable_eager_execution": disable_eager_execution,
    "executing_eagerly": executing_eagerly,
    "executing_eagerly_outside_functions": executing_eagerly_outside_functions,
    "GradientTape": GradientTape, "function": function, "TensorSpec": TensorSpec,
}

# tf.contrib.eager (tfe)
CONTRIB_EAGER_EXPORTS = {
    "defun": defun, "function": function, "GradientTape": GradientTape,
    "executing_eagerly": executing_eagerly, "enable_eager_execution": enable_eager_execution,
    "in_eager_mode": executing_eagerly, "num_gpus": num_gpus, "run": run,
    "implicit_gradients": implicit_gradients, "implicit_value_and_gradients": implicit_value_and_gradients,
    "gradients_function": gradients_function, "value_and_gradients_function": value_and_gradients_function,
    "EagerTensor": EagerTensor,
}
