"""The multi-label classifier of a run, scored as in Paper 05 (HyILR) §5.3.

A method whose objective trains a multi-label classifier on the encoder features (the HyILR
family, :mod:`hierviz.methods.hyilr`) exposes it as ``objective.predict_proba(features)``;
:func:`evaluate_classifier` thresholds its probabilities on the test split and scores the
label sets with :func:`hierviz.metrics.htc.classifier_scores` (micro/macro F1, Hi-MiF1,
Hi-MaF1). ``hierviz compare`` writes the scores into the run record
(``RunRecord.classifier_metrics``) beside the probe's metrics, and the predicted and true label
sets into ``embeddings.npz`` (``clf_pred_test``, ``clf_true_test``).
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hierviz.evaluation.classification import embed_dataset
from hierviz.metrics.htc import classifier_scores, label_columns, leaf_path_targets
from hierviz.training import StopTraining, atomic_save, load_checkpoint
from hierviz.training.distributed import is_main_process

__all__ = ["ClassifierRecord", "has_classifier", "evaluate_classifier", "EarlyStopping"]


@dataclass
class ClassifierRecord:
    """The scores and label sets of a run's multi-label classifier on the test split.

    Attributes
    ----------
    metrics : dict[str, float]
        :data:`hierviz.metrics.htc.CLASSIFIER_METRICS` in [0, 1].
    y_true, y_pred : numpy.ndarray, shape (n, tree.num_nodes), bool
        The test samples' label sets (leaf and ancestors) and the thresholded predictions,
        ``tree.nodes`` order, root column False.
    threshold : float
    seconds : float
    """

    metrics: dict[str, float]
    y_true: np.ndarray
    y_pred: np.ndarray
    threshold: float
    seconds: float

    def arrays(self) -> dict[str, np.ndarray]:
        """What a run folder's ``embeddings.npz`` adds: ``clf_true_test`` and ``clf_pred_test``."""
        return {"clf_true_test": self.y_true, "clf_pred_test": self.y_pred}


def has_classifier(objective: Any) -> bool:
    """Whether ``objective`` trains a multi-label classifier (it has ``predict_proba(features)``)."""
    return callable(getattr(objective, "predict_proba", None))


class _Probabilities(nn.Module):
    """A model whose ``embed`` is the classifier's probabilities of the model output, for :func:`embed_dataset`."""

    def __init__(self, model: nn.Module, objective: Any) -> None:
        super().__init__()
        self.model, self.objective = model, objective

    @torch.no_grad()
    def embed(self, x: torch.Tensor, use: str = "z") -> torch.Tensor:
        out = self.model(x)  # the output dict: features (and a text encoder's tokens and mask)
        return self.objective.predict_proba({k: v for k, v in out.items() if v is not None})


def evaluate_classifier(
    model: nn.Module,
    objective: Any,
    test_data: Any,
    tree: Any,
    *,
    image_size: int,
    threshold: float = 0.5,
    batch_size: int = 256,
    device: str | torch.device | None = None,
    num_workers: int = 0,
) -> ClassifierRecord:
    """Threshold ``objective.predict_proba`` on the test split's encoder features and score it.

    Parameters
    ----------
    model : hierviz.models.EmbeddingModel
        The trained model (its ``forward`` gives ``features``).
    objective : module with ``predict_proba(out) -> (n, N − 1)`` probabilities of the model output
        Columns: the tree's non-root nodes in ``tree.nodes`` order (:meth:`hierviz.methods.hyilr.HyILRObjective.predict_proba`).
    test_data : hierviz.data.ArrayDataset
        Images, vectors or tokens and leaf labels; with ``leaf_sets``
        (:class:`hierviz.data.text.LabelSetDataset`) the true label sets are the union of each
        sample's paths.
    tree : LabelTree
    image_size : int
        As :func:`hierviz.evaluation.embed_dataset`.
    threshold : float, default 0.5
        A label is predicted when its probability is ``>= threshold`` (Paper 05's sigmoid cut).
    batch_size, device, num_workers
        See :func:`hierviz.evaluation.embed_dataset`.

    Returns
    -------
    ClassifierRecord

    Raises
    ------
    ValueError
        ``objective`` without ``predict_proba``, a threshold outside (0, 1), or probabilities
        of the wrong shape.
    """
    if not has_classifier(objective):
        raise ValueError(f"objective {getattr(objective, 'name', objective)!r} has no multi-label classifier")
    if not 0.0 < float(threshold) < 1.0:
        raise ValueError(f"threshold must lie in (0, 1) (a cut on sigmoid probabilities), got {threshold!r}")
    t0 = time.perf_counter()
    wrapper = _Probabilities(model, objective)
    wrapper.training = model.training  # embed_dataset restores this mode on the model and the objective
    probs, y = embed_dataset(
        wrapper, test_data, image_size, batch_size=batch_size, device=device,
        num_workers=num_workers,
    )  # fmt: skip
    cols = label_columns(tree)
    if probs.shape != (len(y), len(cols)):
        raise ValueError(
            f"predict_proba gave shape {probs.shape}, expected ({len(y)}, {len(cols)}) (the non-root nodes)"
        )
    y_pred = np.zeros((len(y), tree.num_nodes), dtype=bool)
    y_pred[:, cols] = probs >= threshold
    sets = getattr(test_data, "leaf_sets", None)  # documents on several label paths: all of them
    y_true = leaf_path_targets(y if sets is None else np.asarray(sets, dtype=bool), tree)
    return ClassifierRecord(
        metrics=classifier_scores(y_true, y_pred, tree),
        y_true=y_true,
        y_pred=y_pred,
        threshold=float(threshold),
        seconds=time.perf_counter() - t0,
    )


class EarlyStopping:
    """A :func:`hierviz.training.fit` callback: stop on the validation split, keep the best epoch.

    ``hierviz htc``'s rule: after each epoch the classifier's micro + macro F1 on ``val_data``
    (:func:`evaluate_classifier`) is scored; a better score keeps a copy of the model's and the
    objective's weights, and ``patience`` epochs without gain raise
    :class:`hierviz.training.StopTraining`. :meth:`restore` loads the best weights back. The
    scoring runs with the CPU random state saved and restored (its loader draws a base seed), so
    the training's dropout stream is the same with or without this callback.

    Parameters
    ----------
    objective : module with ``predict_proba``
    val_data : hierviz.data.ArrayDataset
    tree : LabelTree
    patience : int
        ``>= 1``.
    image_size, batch_size, num_workers
        As :func:`evaluate_classifier`.
    state_path : path, optional
        Where the scores and the best epoch's weights are saved after each epoch
        (:func:`hierviz.training.atomic_save`), so a run resumed from its training checkpoint
        keeps the best epoch of the epochs before the interruption.
    resume : bool, default False
        Read ``state_path`` first when it exists (an epoch scored after the last save, e.g. killed
        between the training checkpoint and this file, is not scored again).

    Attributes
    ----------
    scores : list of float
        Micro + macro F1 on the validation split after each epoch of this call.
    best_epoch : int or None
        0-based epoch of the best score.

    Raises
    ------
    ValueError
        ``patience`` < 1 or an objective without a classifier.
    """

    def __init__(
        self,
        objective: Any,
        val_data: Any,
        tree: Any,
        patience: int,
        *,
        image_size: int,
        batch_size: int = 256,
        num_workers: int = 0,
        state_path: str | os.PathLike | None = None,
        resume: bool = False,
    ) -> None:
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ValueError(f"patience must be an integer >= 1, got {patience!r}")
        if not has_classifier(objective):
            raise ValueError("early stopping scores a multi-label classifier; this objective has none")
        self.objective, self.val_data, self.tree, self.patience = objective, val_data, tree, patience
        self.image_size, self.batch_size, self.num_workers = image_size, batch_size, num_workers
        self.scores: list[float] = []
        self.best_epoch: int | None = None
        self._best: tuple[dict, dict] | None = None
        self.state_path = None if state_path is None else Path(state_path)
        if resume and self.state_path is not None and self.state_path.is_file():
            state = load_checkpoint(self.state_path)
            self.scores, self.best_epoch = [float(x) for x in state["scores"]], state["best_epoch"]
            self._best = (state["model"], state["objective"]) if state["model"] is not None else None

    def _save(self) -> None:
        if self.state_path is not None and is_main_process():  # under torchrun rank 0 writes, as fit's checkpoint
            best = self._best or (None, None)
            state = {"scores": self.scores, "best_epoch": self.best_epoch, "model": best[0], "objective": best[1]}
            atomic_save(state, self.state_path, keep_previous=False)

    def __call__(self, epoch: int, info: dict[str, Any]) -> None:
        model = getattr(info["model"], "module", info["model"])  # DDP's wrapped module
        device = next(model.parameters()).device
        with torch.random.fork_rng(devices=[]):  # the loader's base seed: no draw from training's CPU stream
            m = evaluate_classifier(
                model, self.objective, self.val_data, self.tree, image_size=self.image_size,
                batch_size=self.batch_size, device=device, num_workers=self.num_workers,
            ).metrics  # fmt: skip
        score = m["clf_micro_f1"] + m["clf_macro_f1"]
        self.scores.append(float(score))
        if self.best_epoch is None or score > max(self.scores[:-1], default=-1.0):
            self.best_epoch = epoch
            self._best = (copy.deepcopy(model.state_dict()), copy.deepcopy(self.objective.state_dict()))
            self._save()
            return
        self._save()
        if len(self.scores) - 1 - self.scores.index(max(self.scores)) >= self.patience:
            raise StopTraining

    def restore(self, model: nn.Module) -> None:
        """Load the best epoch's weights into ``model`` and the objective (nothing if no epoch was scored)."""
        if self._best is not None:
            getattr(model, "module", model).load_state_dict(self._best[0])
            self.objective.load_state_dict(self._best[1])

    def record(self) -> dict[str, Any]:
        """``{"best_epoch", "epochs", "val_scores", "patience"}`` for the run record."""
        return {
            "best_epoch": self.best_epoch,
            "epochs": len(self.scores),
            "val_scores": list(self.scores),
            "patience": self.patience,
        }
