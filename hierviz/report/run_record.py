"""The typed run record: what each run's ``result.json`` holds, checked once where it is written and read.

``hierviz compare`` writes one :class:`RunRecord` per finished run (through
:meth:`RunRecord.to_dict`); :func:`hierviz.experiments.load_records` reads each one back through
:meth:`RunRecord.from_dict`, and the tables and the report read nothing else about a run: its
display names, geometry, metrics and the ``loss.*`` values it read are in the record, so a folder
made with a user module is reported without importing that module.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hierviz.report.run_files import RunFileError

__all__ = ["RunRecord"]

_FIX = "delete the run folder and rerun"


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One finished run of ``hierviz compare`` (``runs/<method>-<geometry>-s<seed>/result.json``).

    Attributes
    ----------
    name : str
        The run folder's name.
    method, geometry : str
        Registry names of the method and the geometry.
    seed : int
    metrics : dict of str to float
        The evaluation protocol's metrics (HF1, H-Acc, …, or paper 04's columns), and those of
        the registered metric functions of its arrays (:func:`hierviz.metrics.compute_metrics`).
    metric_info : dict or None
        ``{key: {"label", "higher_is_better"}}`` of the metrics a registered function computed,
        so a report rebuilt without the module that registered one titles it (None: none).
    method_display, geometry_display : str
        Their display names (tables and figures read these, never a registry). Records of
        hierviz 0.1 lack them (None).
    geometry_config : dict or None
        ``Geometry.config()``: ``{"name", "c"}``; ``get_geometry(**geometry_config)`` rebuilds it.
    curvature : float or None
        The curvature magnitude c at the end of training (learned with ``model.learn_curvature``).
    classifier_metrics : dict or None
        The scores of the method's own multi-label classifier on the test split (the HyILR
        family: :data:`hierviz.metrics.htc.CLASSIFIER_METRICS`); None for methods
        without one and for records written before it.
    early_stopping : dict or None
        With ``train.patience``: ``best_epoch`` (0-based, the epoch evaluated), ``epochs``
        (trained), ``val_scores`` (classifier micro + macro F1 on the validation split per
        epoch), ``patience``; None otherwise.
    learned : dict or None
        Learned scalars of the objective, when it has ``learned()`` (HyILR: ``c``, ``alpha_t``,
        ``alpha_l`` of Eq. 12).
    depth_terms : dict or None
        The depth regularisers added to the method's loss on a hyperbolic geometry,
        ``{term: weight}`` (``cone``, ``center``, ``order``, ``cpcc``;
        :func:`hierviz.methods.depth_terms`); None when none was added, and in records written
        before hierviz 0.4 (their ``hparams`` hold the weights).
    optimizer : dict or None
        The settings ``fit`` built the optimiser and schedule from: ``optimizer`` (``"adamw"`` or
        ``"adam"``), ``schedule`` (``"warmup_cosine"`` or ``"constant"``), ``weight_decay``,
        ``lr_backbone``, ``lr_head``, ``warmup_epochs`` (0 on a constant schedule): the run's
        ``train.*`` with its method's :class:`hierviz.methods.TrainOverrides` applied. None for
        a run with nothing to train and for records written before hierviz 0.4.
    radius : dict or None
        The radius record (:func:`hierviz.evaluation.run_radius`).
    hparams : dict or None
        The ``loss.*`` values the run read (its method's keys only; absent before 0.3).
    epochs, train_seconds, eval_seconds, augment_on, world_size, global_batch_size,
    eval_embedding, protocol, device, history, step_history, embeddings, fingerprint, hierviz
        How it ran: see ``hierviz.experiments.run_one``.
    extra : dict
        Keys this version does not know (a newer or older writer); written back unchanged.

    Examples
    --------
    >>> r = RunRecord.from_dict({"name": "x-euclidean-s0", "method": "x", "geometry": "euclidean", "seed": 0,
    ...                          "metrics": {"hf1": 0.5}, "method_display": "X", "new_key": 1})
    >>> r.method_display, r.extra, r.to_dict()["new_key"], "radius" in r.to_dict()
    ('X', {'new_key': 1}, 1, False)
    >>> RunRecord.from_dict({"name": "a", "method": "x", "geometry": "g", "seed": "0", "metrics": {}})
    Traceback (most recent call last):
    ...
    hierviz.report.run_files.RunFileError: run record: 'seed' must be an integer, got '0'; delete the run folder and rerun
    """

    name: str
    method: str
    method_display: str | None = None
    geometry: str
    geometry_display: str | None = None
    geometry_config: dict[str, Any] | None = None
    curvature: float | None = None
    seed: int
    metrics: dict[str, Any]
    metric_info: dict[str, Any] | None = None
    classifier_metrics: dict[str, float] | None = None
    early_stopping: dict[str, Any] | None = None
    learned: dict[str, float] | None = None
    depth_terms: dict[str, float] | None = None
    optimizer: dict[str, Any] | None = None
    radius: dict[str, Any] | None = None
    epochs: int | None = None
    train_seconds: float | None = None
    eval_seconds: float | None = None
    augment_on: str | None = None
    world_size: int | None = None
    global_batch_size: int | None = None
    eval_embedding: str | None = None
    protocol: str | None = None
    device: str | None = None
    history: Any = None
    step_history: dict[str, Any] | None = None
    embeddings: str | None = None
    hparams: dict[str, Any] | None = None
    fingerprint: str | None = None
    hierviz: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "run record") -> RunRecord:
        """Check and type a record read from JSON (or about to be written).

        Raises
        ------
        RunFileError
            A required key missing (``name``, ``method``, ``geometry``, ``seed``, ``metrics``) or a
            value of the wrong type: one line naming ``where``, the key and the fix.
        """
        if not isinstance(d, Mapping):
            raise RunFileError(f"{where}: must be a JSON object, got {type(d).__name__}; {_FIX}")
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        for key in ("name", "method", "geometry", "seed", "metrics"):
            if key not in d:
                raise RunFileError(f"{where}: run record without key {key!r}; {_FIX}")
        for key in ("name", "method", "geometry", "method_display", "geometry_display", "embeddings"):
            if d.get(key) is not None and not isinstance(d[key], str):
                raise RunFileError(f"{where}: {key!r} must be a string, got {d[key]!r}; {_FIX}")
        seed = d["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int):
            if not (isinstance(seed, float) and math.isfinite(seed) and seed.is_integer()):
                raise RunFileError(f"{where}: 'seed' must be an integer, got {seed!r}; {_FIX}")
        for key in (
            "metrics",
            "metric_info",
            "classifier_metrics",
            "early_stopping",
            "geometry_config",
            "radius",
            "depth_terms",
            "optimizer",
            "hparams",
            "step_history",
        ):
            if d.get(key) is not None and not isinstance(d[key], Mapping):
                raise RunFileError(f"{where}: {key!r} must be a JSON object, got {type(d[key]).__name__}; {_FIX}")
        values = {k: v for k, v in d.items() if k in known}
        values["seed"] = int(seed)
        values["metrics"] = dict(d["metrics"])
        return cls(**values, extra={k: v for k, v in d.items() if k not in known})

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``result.json``: the fields in order (None ones left out), then ``extra``."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out = {k: v for k, v in out.items() if v is not None}
        out.update(self.extra)
        return out
