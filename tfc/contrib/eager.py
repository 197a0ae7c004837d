"""``tf.contrib.eager`` (``tfe``) of TF 1.x: ``tfe.enable_eager_execution``, ``tfe.Variable``,
``tfe.defun``, ``tfe.GradientTape``, ``tfe.implicit_gradients``, ``tfe.Iterator``,
``tfe.Saver``... (tfc/frontend/eager, tfc/frontend/data/eager.py, tfc/frontend/saver.py)."""
from tfc import _api

_api.build()  # the TF1 namespace (its op registry) before the eager names

from tfc.frontend.data.eager import EagerIterator as _EagerIterator  # noqa: E402
from tfc.frontend.eager import CONTRIB_EAGER_EXPORTS as _EXPORTS  # noqa: E402
from tfc.frontend.eager.context import executing_eagerly as _executing_eagerly  # noqa: E402
from tfc.frontend.saver import Saver as _TrainSaver  # noqa: E402
from tfc.frontend.variables import Variable  # noqa: E402


class Iterator(_EagerIterator):
    """``tfe.Iterator(dataset)``: a Python iterator over a dataset in eager mode."""

    def __init__(self, dataset):
        if not _executing_eagerly():
            raise RuntimeError(f"{type(self)} objects can only be used when eager execution is enabled, use "
                               "tf.data.Dataset.make_initializable_iterator or "
                               "tf.data.Dataset.make_one_shot_iterator for graph construction")
        super().__init__(dataset)


class Saver:
    """``tfe.Saver(var_list)``: ``save(file_prefix, global_step=None)`` and
    ``restore(file_prefix)`` of eager variables (tf.train.Saver underneath)."""

    def __init__(self, var_list):
        self._saver = _TrainSaver(var_list=var_list)

    def save(self, file_prefix, global_step=None):
        return self._saver.save(None, file_prefix, write_meta_graph=False, global_step=global_step)

    def restore(self, file_prefix):
        self._saver.restore(None, file_prefix)


globals().update(_EXPORTS)
__all__ = sorted(list(_EXPORTS) + ["Variable", "Iterator", "Saver"])
