"""``tf.contrib.eager`` (``tfe``) of TF 1.x: ``tfe.enable_eager_execution``, ``tfe.Variable``,
``tfe.defun``, ``tfe.GradientTape``, ``tfe.implicit_gradients``... (tfc/frontend/eager)."""
from tfc import _api

_api.build()  # the TF1 namespace (its op registry) before the eager names

from tfc.frontend.eager import CONTRIB_EAGER_EXPORTS as _EXPORTS  # noqa: E402
from tfc.frontend.variables import Variable  # noqa: E402

globals().update(_EXPORTS)
__all__ = sorted(list(_EXPORTS) + ["Variable"])
