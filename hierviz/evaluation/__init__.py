"""Evaluation protocols: each turns a trained model into one typed record.

``classification`` (paper 01 §4.4): embed train/test with the frozen encoder, fit a
balanced linear probe, compute the hierarchy metrics and parent prototypes
(:class:`ClassificationRecord`). ``unseen`` (paper 04 §III): seen/unseen leaves, leaf F1,
ranking metrics, Acc_blind / Acc_aware on the lowest seen ancestor (:class:`UnseenRecord`).
``retrieval`` / ``retrieval-cosine`` (paper 03 §3.1): MAP@k of test rows querying the training
rows (:class:`RetrievalRecord`, :mod:`hierviz.evaluation.retrieval`, with Paper 03's mapper
trained by ``fit``). A method names its protocol (:attr:`hierviz.methods.Method.protocol`); a new
protocol is one function ``evaluate(ctx: EvalContext)`` registered with :func:`register_protocol`,
which declares its extras as the typed fields of a :class:`ProtocolSpec` (``make_split``: its own
train/test split, as ``unseen`` has; ``per_seed``, ``refines``, ``takes_index``).
"""

from hierviz.evaluation.classification import (
    ClassificationRecord,
    EvalResult,
    classification_protocol,
    embed_dataset,
    evaluate_model,
)
from hierviz.evaluation.protocols import PROTOCOLS, EvalContext, ProtocolSpec, register_protocol
from hierviz.evaluation.radius import run_radius
from hierviz.evaluation.retrieval import (  # registers "retrieval" and "retrieval-cosine"
    CosineMapper,
    MapperModel,
    RetrievalRecord,
    chance_scores,
    fit_mapper,
    retrieval_protocol,
)
from hierviz.evaluation.unseen import (  # registers "unseen"
    UnseenRecord,
    unseen_baselines,
    unseen_metrics,
    unseen_protocol,
    unseen_split,
)

__all__ = [
    "PROTOCOLS",
    "register_protocol",
    "ProtocolSpec",
    "EvalContext",
    "ClassificationRecord",
    "EvalResult",
    "classification_protocol",
    "embed_dataset",
    "evaluate_model",
    "run_radius",
    "MapperModel",
    "CosineMapper",
    "fit_mapper",
    "RetrievalRecord",
    "retrieval_protocol",
    "chance_scores",
    "UnseenRecord",
    "unseen_baselines",
    "unseen_metrics",
    "unseen_protocol",
    "unseen_split",
]
