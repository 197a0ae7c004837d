"""tf.saved_model.main_op: the usual SavedModel main ops (TF 1.15's main_op_impl.py)."""
from __future__ import annotations


def main_op():
    """A group of the global and local variable initializers and the table initializers."""
    from ..ops.control_flow_ops import group
    from ..train.monitored_session import _tables_initializer
    from ..variables import global_variables_initializer, local_variables_initializer

    init = global_variables_initializer()
    init_local = local_variables_initializer()
    init_tables = _tables_initializer()
    return group(init, init_local, init_tables)


def main_op_with_restore(restore_op_name):
    """``main_op()``, then the op named ``restore_op_name``."""
    from ..graph import control_dependencies
    from ..ops.control_flow_ops import group

    with control_dependencies([main_op()]):
        return group(restore_op_name)


EXPORTS = {"main_op": main_op, "main_op_with_restore": main_op_with_restore}
