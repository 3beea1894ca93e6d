"""A features ``.npz`` as a registered vector dataset of ``hierviz compare`` (Paper 03 (Hyper-DINO) in the run core).

``hierviz compare --data F.npz`` reads a features file directly (:func:`hierviz.data.load_dataset`);
:func:`register_features` gives it a name, a default tree and ``inputs="vectors"``, so
``--dataset NAME`` works like a built-in dataset (the encoder default follows the vectors:
``mlp``; Paper 03's mapper is ``--encoder mapper``). From the shell, register it in a module
and pass ``--import MODULE``.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from hierviz.data import ArrayDataset, load_dataset, register_dataset

__all__ = ["register_features"]


def register_features(
    name: str, path: str | PathLike, *, default_tree: str | PathLike | None = None, replace: bool = False
) -> str:
    """Register the features file ``path`` as the vector dataset ``name``.

    Parameters
    ----------
    name : str
        Dataset name (case-insensitive).
    path : str or PathLike
        A features ``.npz`` (:func:`hierviz.features.save_features`, ``hierviz features``): read
        when the dataset is loaded, so a file rewritten later is read anew.
    default_tree : str or PathLike, optional
        Tree name or tree JSON used when the dataset is given without ``--tree``.
    replace : bool, default False
        Allow re-registering ``name``.

    Returns
    -------
    str
        ``name`` lower-cased, as registered.

    Raises
    ------
    FileNotFoundError
        ``path`` is not a file.
    ValueError
        ``name`` is already registered (without ``replace=True``).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from hierviz.features import FeaturesData, save_features
    >>> from hierviz.data import DATASETS
    >>> p = save_features(os.path.join(tempfile.mkdtemp(), "f.npz"), FeaturesData(np.eye(4, 3), np.array([0, 1, 0, 1])))
    >>> register_features("doc-feats", p)
    'doc-feats'
    >>> DATASETS["doc-feats"].inputs, load_dataset("doc-feats")
    ('vectors', ArrayDataset('f', N=4, D=3, C=2))
    >>> DATASETS.unregister("doc-feats")
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"path: {p} is not a file; write a features file with 'hierviz features' first")

    def loader() -> ArrayDataset:
        return load_dataset(p)

    loader.__doc__ = f"Features file {p} (a vector dataset)."
    register_dataset(name, default_tree=default_tree, inputs="vectors", replace=replace)(loader)
    return str(name).strip().lower()
