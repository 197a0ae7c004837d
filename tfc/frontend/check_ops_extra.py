"""tf.assert_near and tf.assert_proper_iterable (also under tf.debugging), as TF 1.15's
check_ops.py builds them: ``assert_near`` reduces ``|x - y| < atol + rtol * |y|`` with
``All`` and hands it to tf.Assert (tfc/frontend/check_ops.py) with TF's data and message."""
from __future__ import annotations

import numpy as np

from .check_ops import Assert, _label
from .convert import convert_to_tensor
from .graph import Tensor, name_scope


def assert_proper_iterable(values):
    """Raise TypeError unless ``values`` is an iterable other than a Tensor, SparseTensor,
    numpy array or string."""
    from .sparse_tensor import SparseTensor

    if isinstance(values, (Tensor, SparseTensor, np.ndarray, bytes, str)):
        raise TypeError(f'Expected argument "values" to be a "proper" iterable.  Found: {type(values)}')
    if not hasattr(values, "__iter__"):
        raise TypeError(f'Expected argument "values" to be iterable.  Found: {type(values)}')


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None, name=None):
    """An op failing the run unless x and y are close element-wise:
    ``|x - y| < atol + rtol * |y|`` (rtol and atol default to 10 eps of x's dtype)."""
    from .ops import math_ops

    message = message or ""
    with name_scope(name, "assert_near", [x, y, rtol, atol, data]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        eps = np.finfo(x.dtype.as_numpy_dtype).eps
        rtol = 10 * eps if rtol is None else rtol
        atol = 10 * eps if atol is None else atol
        rtol = convert_to_tensor(rtol, name="rtol", dtype=x.dtype)
        atol = convert_to_tensor(atol, name="atol", dtype=x.dtype)
        if data is None:
            data = [message, f"x and y not equal to tolerance rtol = {rtol}, atol = {atol}",
                    f"x ({_label(x)}) = ", x, f"y ({_label(y)}) = ", y]
        tol = atol + rtol * math_ops.abs(y)
        diff = math_ops.abs(x - y)
        condition = math_ops.reduce_all(math_ops.less(diff, tol))
        return Assert(condition, data, summarize=summarize)


TF_EXPORTS = ["assert_near", "assert_proper_iterable"]
DEBUGGING_EXPORTS = TF_EXPORTS
