"""tf.saved_model.utils: TensorInfo protos of tensors and back (TF 1.15's utils_impl.py)."""
from __future__ import annotations

from .. import tf_logging as logging

_MODULE = "tensorflow.python.saved_model.utils_impl"


def _v1_only(name: str, stacklevel: int = 3) -> None:
    logging.deprecation_warning(
        name, _MODULE, "This function will only be available through the v1 compatibility library as "
                       f"tf.compat.v1.saved_model.utils.{name} or tf.compat.v1.saved_model.{name}.",
        stacklevel=stacklevel)


def build_tensor_info_internal(tensor):
    from tfc.protos import TensorInfo

    from .. import dtypes

    if not hasattr(tensor, "value_index"):
        raise TypeError(f"build_tensor_info needs a Tensor, not {type(tensor).__name__}: {tensor!r}")
    return TensorInfo(name=tensor.name, dtype=dtypes.as_dtype(tensor.dtype).as_datatype_enum,
                      tensor_shape=tensor.get_shape().as_proto())


def build_tensor_info(tensor):
    """A TensorInfo proto (name, dtype, shape) for ``tensor``."""
    _v1_only("build_tensor_info")
    return build_tensor_info_internal(tensor)


def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The tensor of ``graph`` (default: the default graph) that ``tensor_info`` names."""
    from ..graph import get_default_graph
    from ..saver import _prepend_name_scope

    _v1_only("get_tensor_from_tensor_info")
    graph = graph or get_default_graph()
    encoding = tensor_info.WhichOneof("encoding")
    if encoding == "name":
        return graph.get_tensor_by_name(_prepend_name_scope(tensor_info.name, import_scope))
    if encoding in ("coo_sparse", "composite_tensor"):
        from ..errors import UnimplementedError

        raise UnimplementedError(None, None, f"tfc does not support {encoding} TensorInfos (sparse and composite "
                                             "tensors) yet")
    raise ValueError("Invalid TensorInfo.encoding: %s" % encoding)


EXPORTS = {"build_tensor_info": build_tensor_info, "get_tensor_from_tensor_info": get_tensor_from_tensor_info}
