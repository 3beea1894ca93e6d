"""Export a finished run's encoder features to a features ``.npz`` (Paper 03 (Hyper-DINO) §2.1).

:func:`export_run` reads a finished run folder of ``hierviz compare``
(``<out>/runs/<method>-<geometry>-s<seed>/`` with ``config.json`` and ``checkpoint.pt``),
rebuilds its encoder from the saved config, loads the trained weights and embeds every
image of the run's data set (all splits, the split the run used recorded per row, with
the data set's groups). The features are the encoder output *before* the projection head.
It lives here, not in :mod:`hierviz.features`, because it reads an experiment config:
:mod:`hierviz.features` sits below :mod:`hierviz.experiments` (``hierviz.features.export_run``
still works).
"""

from __future__ import annotations

import json
from os import PathLike

from hierviz.experiments.config import ExperimentConfig
from hierviz.experiments.inputs import load_data
from hierviz.features.export import dataset_features, find_run_dir
from hierviz.features.io import FeaturesData
from hierviz.models import build_encoder
from hierviz.training import load_checkpoint

__all__ = ["export_run"]


def export_run(run_dir: str | PathLike, *, batch_size: int = 256, progress: bool = False) -> FeaturesData:
    """Encoder features (before the head) of every image of a finished run's data set.

    Parameters
    ----------
    run_dir : str or PathLike
        A run folder, or a ``compare`` output with a single run (:func:`hierviz.features.find_run_dir`).
    batch_size : int, default 256
    progress : bool, default False

    Returns
    -------
    FeaturesData
        ``features`` (N, F) float32, ``labels``, ``classes``, ``groups`` (the data set's,
        e.g. HAM10000 lesion ids), ``split`` (the run's grouped train/val/test split,
        recomputed from its ``data.split_seed``) and ``source`` (the run folder).

    Raises
    ------
    FileNotFoundError, ValueError
        No run there, several runs, an unreadable config or checkpoint (one line). A run made
        with a user method, geometry or loss key is read without its module; a user dataset or
        encoder needs it (``hierviz features --import MODULE``).
    """
    run = find_run_dir(run_dir)
    try:
        saved = json.loads((run / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--run {run}: cannot read config.json ({exc}); rerun the run or pick another") from None
    saved.pop("fingerprint", None)
    saved.pop("run", None)
    saved.pop("method", None)  # what the method declares (hierviz.methods.Method.declared), not a setting
    # the export reads the data and encoder settings only: the run's method, geometry and loss keys may
    # come from a user module (--import in compare) that this process need not load to read the encoder
    for key in ("methods", "geometries", "loss", "report"):
        saved.pop(key, None)
    cfg = ExperimentConfig.from_dict(saved, where=str(run / "config.json"))
    ds, _tree, _ = load_data(cfg)
    state = load_checkpoint(run / "checkpoint.pt")["model"]
    encoder = build_encoder(cfg.model.encoder, width=cfg.model.width, pretrained=None)
    enc_state = {k[len("encoder.") :]: v for k, v in state.items() if k.startswith("encoder.")}
    encoder.load_state_dict(enc_state)
    image_size = int(cfg.data.image_size or ds.images.shape[1])
    return dataset_features(
        encoder, ds, image_size, int(cfg.data.split_seed), str(run), batch_size=batch_size, progress=progress
    )
