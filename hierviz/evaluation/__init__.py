"""Evaluation protocols: each turns a trained model into one typed record.

``classification`` (paper 01 §4.4): embed train/test with the frozen encoder, fit a
balanced linear probe, compute the hierarchy metrics and parent prototypes
(:class:`ClassificationRecord`). A method names its protocol
(:attr:`hierviz.methods.Method.protocol`); a new protocol is one function registered with
:func:`register_protocol`.
"""

from hierviz.evaluation.classification import (
    PROTOCOLS,
    ClassificationRecord,
    EvalResult,
    classification_protocol,
    embed_dataset,
    evaluate_model,
    register_protocol,
)
from hierviz.evaluation.radius import run_radius

__all__ = [
    "PROTOCOLS",
    "register_protocol",
    "ClassificationRecord",
    "EvalResult",
    "classification_protocol",
    "embed_dataset",
    "evaluate_model",
    "run_radius",
]
