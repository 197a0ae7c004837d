"""tf.saved_model.signature_def_utils: SignatureDef builders (TF 1.15's signature_def_utils_impl.py)."""
from __future__ import annotations

from . import constants
from .utils import build_tensor_info_internal as _tensor_info


def build_signature_def(inputs=None, outputs=None, method_name=None):
    """A SignatureDef from maps of TensorInfos and a method name."""
    from tfc.protos import SignatureDef

    signature_def = SignatureDef()
    if inputs is not None:
        for item in inputs:
            signature_def.inputs[item].CopyFrom(inputs[item])
    if outputs is not None:
        for item in outputs:
            signature_def.outputs[item].CopyFrom(outputs[item])
    if method_name is not None:
        signature_def.method_name = method_name
    return signature_def


def _is_tensor(value) -> bool:
    return hasattr(value, "value_index") and hasattr(value, "op")


def regression_signature_def(examples, predictions):
    """``tensorflow/serving/regress``: string ``examples`` in, float ``predictions`` out."""
    from tfc.protos import DT_FLOAT, DT_STRING

    if examples is None:
        raise ValueError("Regression examples cannot be None.")
    if not _is_tensor(examples):
        raise ValueError("Regression examples must be a string Tensor.")
    if predictions is None:
        raise ValueError("Regression predictions cannot be None.")
    input_tensor_info = _tensor_info(examples)
    if input_tensor_info.dtype != DT_STRING:
        raise ValueError("Regression examples must be a string Tensor.")
    output_tensor_info = _tensor_info(predictions)
    if output_tensor_info.dtype != DT_FLOAT:
        raise ValueError("Regression output must be a float Tensor.")
    return build_signature_def({constants.REGRESS_INPUTS: input_tensor_info},
                               {constants.REGRESS_OUTPUTS: output_tensor_info}, constants.REGRESS_METHOD_NAME)


def classification_signature_def(examples, classes, scores):
    """``tensorflow/serving/classify``: string ``examples`` in, string ``classes`` and/or float ``scores`` out."""
    from tfc.protos import DT_FLOAT, DT_STRING

    if examples is None:
        raise ValueError("Classification examples cannot be None.")
    if not _is_tensor(examples):
        raise ValueError("Classification examples must be a string Tensor.")
    if classes is None and scores is None:
        raise ValueError("Classification classes and scores cannot both be None.")
    input_tensor_info = _tensor_info(examples)
    if input_tensor_info.dtype != DT_STRING:
        raise ValueError("Classification examples must be a string Tensor.")
    signature_outputs = {}
    if classes is not None:
        classes_tensor_info = _tensor_info(classes)
        if classes_tensor_info.dtype != DT_STRING:
            raise ValueError("Classification classes must be a string Tensor.")
        signature_outputs[constants.CLASSIFY_OUTPUT_CLASSES] = classes_tensor_info
    if scores is not None:
        scores_tensor_info = _tensor_info(scores)
        if scores_tensor_info.dtype != DT_FLOAT:
            raise ValueError("Classification scores must be a float Tensor.")
        signature_outputs[constants.CLASSIFY_OUTPUT_SCORES] = scores_tensor_info
    return build_signature_def({constants.CLASSIFY_INPUTS: input_tensor_info}, signature_outputs,
                               constants.CLASSIFY_METHOD_NAME)


def predict_signature_def(inputs, outputs):
    """``tensorflow/serving/predict``: any named input and output tensors."""
    if inputs is None or not inputs:
        raise ValueError("Prediction inputs cannot be None or empty.")
    if outputs is None or not outputs:
        raise ValueError("Prediction outputs cannot be None or empty.")
    return build_signature_def({key: _tensor_info(tensor) for key, tensor in inputs.items()},
                               {key: _tensor_info(tensor) for key, tensor in outputs.items()},
                               constants.PREDICT_METHOD_NAME)


def _is_valid_predict_signature(signature_def) -> bool:
    return signature_def.method_name == constants.PREDICT_METHOD_NAME and bool(signature_def.inputs) and \
        bool(signature_def.outputs)


def _is_valid_regression_signature(signature_def) -> bool:
    from tfc.protos import DT_FLOAT, DT_STRING

    if signature_def.method_name != constants.REGRESS_METHOD_NAME:
        return False
    if set(signature_def.inputs) != {constants.REGRESS_INPUTS}:
        return False
    if signature_def.inputs[constants.REGRESS_INPUTS].dtype != DT_STRING:
        return False
    if set(signature_def.outputs) != {constants.REGRESS_OUTPUTS}:
        return False
    return signature_def.outputs[constants.REGRESS_OUTPUTS].dtype == DT_FLOAT


def _is_valid_classification_signature(signature_def) -> bool:
    from tfc.protos import DT_FLOAT, DT_STRING

    if signature_def.method_name != constants.CLASSIFY_METHOD_NAME:
        return False
    if set(signature_def.inputs) != {constants.CLASSIFY_INPUTS}:
        return False
    if signature_def.inputs[constants.CLASSIFY_INPUTS].dtype != DT_STRING:
        return False
    allowed = {constants.CLASSIFY_OUTPUT_CLASSES: DT_STRING, constants.CLASSIFY_OUTPUT_SCORES: DT_FLOAT}
    if not signature_def.outputs:
        return False
    return all(key in allowed and info.dtype == allowed[key] for key, info in signature_def.outputs.items())


def is_valid_signature(signature_def) -> bool:
    """Whether a SignatureDef is a valid predict, classify or regress signature."""
    if signature_def is None:
        return False
    return (_is_valid_classification_signature(signature_def) or _is_valid_regression_signature(signature_def)
            or _is_valid_predict_signature(signature_def))


EXPORTS = {
    "build_signature_def": build_signature_def, "classification_signature_def": classification_signature_def,
    "is_valid_signature": is_valid_signature, "predict_signature_def": predict_signature_def,
    "regression_signature_def": regression_signature_def,
}
