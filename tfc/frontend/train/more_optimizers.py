"""More TF1 optimizers: Adadelta, Ftrl, ProximalGradientDescent, ProximalAdagrad.

Each follows its TF 1.15 module (python/training/adadelta.py, ftrl.py,
proximal_gradient_descent.py, proximal_adagrad.py): the same slots (``w/Adadelta`` and
``w/Adadelta_1``, ``w/Ftrl`` and ``w/Ftrl_1``, ``w/ProximalAdagrad``), the same
hyper-parameter tensors made in ``_prepare`` (``Adadelta/lr``, ``Ftrl/learning_rate``,
``Ftrl/l1_regularization_strength``...), the same errors and one training op per variable
(more_training_ops.py).
"""
from __future__ import annotations

from ..convert import convert_to_tensor
from ..graph import colocate_with
from ..ops.math_ops import cast
from . import more_training_ops
from .optimizer import Optimizer


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler, 2012): slots ``accum`` and ``accum_update``."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False, name="Adadelta"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon
        self._lr_t = None
        self._rho_t = None
        self._epsilon_t = None

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self):
        lr = self._call_if_callable(self._lr)
        rho = self._call_if_callable(self._rho)
        epsilon = self._call_if_callable(self._epsilon)
        self._lr_t = convert_to_tensor(lr, name="lr")
        self._rho_t = convert_to_tensor(rho, name="rho")
        self._epsilon_t = convert_to_tensor(epsilon, name="epsilon")

    def _apply_dense(self, grad, var):
        accum = self.get_slot(var, "accum")
        accum_update = self.get_slot(var, "accum_update")
        dtype = var.dtype.base_dtype
        return more_training_ops.apply_adadelta(
            var, accum, accum_update, cast(self._lr_t, dtype), cast(self._rho_t, dtype), cast(self._epsilon_t, dtype),
            grad, use_locking=self._use_locking)


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal (McMahan et al., 2013): slots ``accum`` (initial_accumulator_value) and
    ``linear``; ApplyFtrlV2 when ``l2_shrinkage_regularization_strength`` > 0."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0, use_locking=False, name="Ftrl",
                 accum_name=None, linear_name=None, l2_shrinkage_regularization_strength=0.0):
        super().__init__(use_locking, name)
        if initial_accumulator_value < 0.0:
            raise ValueError("initial_accumulator_value %f needs to be positive or zero" % initial_accumulator_value)
        if learning_rate_power > 0.0:
            raise ValueError("learning_rate_power %f needs to be negative or zero" % learning_rate_power)
        if l1_regularization_strength < 0.0:
            raise ValueError("l1_regularization_strength %f needs to be positive or zero" %
                             l1_regularization_strength)
        if l2_regularization_strength < 0.0:
            raise ValueError("l2_regularization_strength %f needs to be positive or zero" %
                             l2_regularization_strength)
        if l2_shrinkage_regularization_strength < 0.0:
            raise ValueError("l2_shrinkage_regularization_strength %f needs to be positive or zero" %
                             l2_shrinkage_regularization_strength)
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength
        self._l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self._learning_rate_tensor = None
        self._learning_rate_power_tensor = None
        self._l1_regularization_strength_tensor = None
        self._l2_regularization_strength_tensor = None
        self._l2_shrinkage_regularization_strength_tensor = None
        self._accum_name = accum_name
        self._linear_name = linear_name

    def _create_slots(self, var_list):
        from ..ops.constant_op import constant

        for v in var_list:
            with colocate_with(v):
                val = constant(self._initial_accumulator_value, dtype=v.dtype.base_dtype, shape=v.get_shape())
                self._get_or_make_slot(v, val, "accum", self._accum_name or self._name)
                self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(self._learning_rate, name="learning_rate")
        self._l1_regularization_strength_tensor = convert_to_tensor(self._l1_regularization_strength,
                                                                    name="l1_regularization_strength")
        self._l2_regularization_strength_tensor = convert_to_tensor(self._l2_regularization_strength,
                                                                    name="l2_regularization_strength")
        self._l2_shrinkage_regularization_strength_tensor = convert_to_tensor(
            self._l2_shrinkage_regularization_strength, name="l2_shrinkage_regularization_strength")
        self._learning_rate_power_tensor = convert_to_tensor(self._learning_rate_power, name="learning_rate_power")

    def _apply_dense(self, grad, var):
        accum = self.get_slot(var, "accum")
        linear = self.get_slot(var, "linear")
        dtype = var.dtype.base_dtype
        lr = cast(self._learning_rate_tensor, dtype)
        l1 = cast(self._l1_regularization_strength_tensor, dtype)
        l2 = cast(self._l2_regularization_strength_tensor, dtype)
        if self._l2_shrinkage_regularization_strength <= 0.0:
            return more_training_ops.apply_ftrl(var, accum, linear, grad, lr, l1, l2,
                                                cast(self._learning_rate_power_tensor, dtype),
                                                use_locking=self._use_locking)
        return more_training_ops.apply_ftrl_v2(var, accum, linear, grad, lr, l1, l2,
                                               cast(self._l2_shrinkage_regularization_strength_tensor, dtype),
                                               cast(self._learning_rate_power_tensor, dtype),
                                               use_locking=self._use_locking)


class ProximalGradientDescentOptimizer(Optimizer):
    """Gradient descent followed by the proximal (FOBOS) step of the l1/l2 penalties."""

    def __init__(self, learning_rate, l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalGradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength
        self._learning_rate_tensor = None
        self._l1_regularization_strength_tensor = None
        self._l2_regularization_strength_tensor = None

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(self._learning_rate, name="learning_rate")
        self._l1_regularization_strength_tensor = convert_to_tensor(self._l1_regularization_strength,
                                                                    name="l1_regularization_strength")
        self._l2_regularization_strength_tensor = convert_to_tensor(self._l2_regularization_strength,
                                                                    name="l2_regularization_strength")

    def _apply_dense(self, grad, var):
        return more_training_ops.apply_proximal_gradient_descent(
            var, self._learning_rate_tensor, self._l1_regularization_strength_tensor,
            self._l2_regularization_strength_tensor, grad, use_locking=self._use_locking).op


class ProximalAdagradOptimizer(Optimizer):
    """Adagrad's learning rate with the proximal (FOBOS) step: slot ``accumulator``."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False, name="ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength
        self._l1_regularization_strength_tensor = None
        self._l2_regularization_strength_tensor = None
        self._learning_rate_tensor = None

    def _create_slots(self, var_list):
        from ..ops.constant_op import constant

        for v in var_list:
            with colocate_with(v):
                val = constant(self._initial_accumulator_value, shape=v.get_shape(), dtype=v.dtype.base_dtype)
            self._get_or_make_slot(v, val, "accumulator", self._name)

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(self._learning_rate, name="learning_rate")
        self._l1_regularization_strength_tensor = convert_to_tensor(self._l1_regularization_strength,
                                                                    name="l1_regularization_strength")
        self._l2_regularization_strength_tensor = convert_to_tensor(self._l2_regularization_strength,
                                                                    name="l2_regularization_strength")

    def _apply_dense(self, grad, var):
        acc = self.get_slot(var, "accumulator")
        return more_training_ops.apply_proximal_adagrad(
            var, acc, self._learning_rate_tensor, self._l1_regularization_strength_tensor,
            self._l2_regularization_strength_tensor, grad, use_locking=self._use_locking)


EXPORTS = {
    "AdadeltaOptimizer": AdadeltaOptimizer,
    "FtrlOptimizer": FtrlOptimizer,
    "ProximalGradientDescentOptimizer": ProximalGradientDescentOptimizer,
    "ProximalAdagradOptimizer": ProximalAdagradOptimizer,
}
