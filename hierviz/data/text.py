r"""Text as a compare input: the word tokenizer and token sequences as dataset samples.

* :class:`WordVocab` — a word-level tokenizer trained on the training split (scikit-learn's
  ``CountVectorizer`` analyzer and vocabulary); ``[PAD] = 0``, ``[CLS] = 1``, ``[UNK] = 2``
  (moved here from :mod:`hierviz.models.text`, which re-exports it).
* A text dataset (``register_dataset(..., inputs="text")``) holds int64 ``(N, s, 2)`` arrays:
  token ids and the padding mask (1 on real tokens, ``[CLS]`` included) of each position.
  :func:`token_tensor` turns one sample into the model input ``(1, s, 2)`` int64, the layout
  every compare transform keeps (a "1 × s × 2 image"); :class:`TokenViews` is the training
  "augmentation" (the sequence itself: Paper 05 trains on the texts as they are).

Examples
--------
>>> vocab = WordVocab(max_size=50).fit(["the cat sat", "the dog ran"])
>>> ids, mask = vocab.encode(["the cat ran fast"], max_len=6)
>>> ids.tolist(), mask.tolist()
([[1, 7, 3, 5, 2, 0]], [[True, True, True, True, True, False]])
>>> packed = pack_tokens(ids, mask)
>>> packed.shape, token_tensor(packed[0]).shape
((1, 6, 2), torch.Size([1, 6, 2]))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import torch

from hierviz.data.base import ArrayDataset

Tensor = torch.Tensor

__all__ = [
    "WordVocab",
    "PAD",
    "CLS",
    "UNK",
    "pack_tokens",
    "is_tokens",
    "token_tensor",
    "TokenViews",
    "LabelSetDataset",
]

PAD, CLS, UNK = 0, 1, 2


class WordVocab:
    """Word-level vocabulary fitted on training texts (scikit-learn's analyzer: lower case, ``\\b\\w\\w+\\b``).

    Parameters
    ----------
    max_size : int, default 20000
        Most frequent words kept (plus the 3 special tokens).
    min_df : int, default 2
        Drop words in fewer training documents (1 when there are fewer than 50 documents).

    Attributes
    ----------
    words : list of str
        Id ``3 + i`` is ``words[i]``.
    """

    def __init__(self, max_size: int = 20000, min_df: int = 2) -> None:
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
            raise ValueError(f"max_size must be a positive integer, got {max_size!r}")
        self.max_size, self.min_df = max_size, min_df
        self.words: list[str] = []
        self._index: dict[str, int] = {}
        self._analyzer = None

    def fit(self, texts: Sequence[str]) -> WordVocab:
        """Learn the vocabulary from ``texts`` (the training split only). Returns ``self``."""
        # heavy: scikit-learn's text features, which nothing else in hierviz loads; on first use
        from sklearn.feature_extraction.text import CountVectorizer

        if len(texts) == 0:
            raise ValueError("WordVocab.fit needs at least one training text")
        cv = CountVectorizer(max_features=self.max_size, min_df=self.min_df if len(texts) >= 50 else 1)
        cv.fit(texts)
        self.words = sorted(cv.vocabulary_, key=cv.vocabulary_.__getitem__)
        self._index = {w: i + 3 for i, w in enumerate(self.words)}
        self._analyzer = cv.build_analyzer()
        return self

    def __len__(self) -> int:
        return len(self.words) + 3

    def tokens(self, text: str) -> list[str]:
        """The analyzer's tokens of one text."""
        if self._analyzer is None:
            raise RuntimeError("WordVocab is not fitted; call fit(train_texts) first")
        return self._analyzer(text)

    def encode(self, texts: Sequence[str], max_len: int = 256) -> tuple[Tensor, Tensor]:
        """Token ids ``[CLS] w1 … w_{max_len−1}`` (cut), right-padded.

        Parameters
        ----------
        texts : sequence of str
        max_len : int, default 256
            Sequence length ``s`` including ``[CLS]`` (>= 2).

        Returns
        -------
        ids : Tensor, shape (N, s), int64
        mask : Tensor, shape (N, s), bool
            True on real tokens (``[CLS]`` included).
        """
        if max_len < 2:
            raise ValueError(f"max_len must be >= 2, got {max_len}")
        ids = torch.zeros(len(texts), max_len, dtype=torch.long)
        for i, t in enumerate(texts):
            row = [CLS] + [self._index.get(w, UNK) for w in self.tokens(t)[: max_len - 1]]
            ids[i, : len(row)] = torch.tensor(row)
        return ids, ids != PAD


def pack_tokens(ids: Any, mask: Any) -> np.ndarray:
    """``(N, s)`` ids and mask → the ``(N, s, 2)`` int64 samples of a text dataset."""
    ids, mask = np.asarray(ids, dtype=np.int64), np.asarray(mask, dtype=np.int64)
    if ids.ndim != 2 or ids.shape != mask.shape:
        raise ValueError(f"ids and mask must both be (N, s), got {ids.shape} and {mask.shape}")
    return np.stack([ids, mask], axis=-1)


def is_tokens(x: Any) -> bool:
    """Whether ``x`` is one text sample: an integer numpy array of shape ``(s, 2)``."""
    return isinstance(x, np.ndarray) and x.ndim == 2 and x.shape[-1] == 2 and np.issubdtype(x.dtype, np.integer)


def token_tensor(x: np.ndarray) -> torch.Tensor:
    """One text sample ``(s, 2)`` as the model input ``(1, s, 2)`` int64."""
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.int64))[None]


class TokenViews:
    """A view of a token sequence: the sequence itself, ``(s, 2)`` → ``(1, s, 2)`` int64.

    Paper 05 (HyILR) trains on the texts without augmentation; the HyILR methods read one view
    (``Needs(views=1)``). Picklable.

    Raises
    ------
    TypeError
        Input that is not an ``(s, 2)`` integer array.
    """

    def __call__(self, x: Any) -> torch.Tensor:
        if not is_tokens(x):
            raise TypeError(
                f"TokenViews takes an (s, 2) integer token array, got {type(x).__name__} {getattr(x, 'shape', '')}"
            )
        return token_tensor(x)

    def __repr__(self) -> str:
        return "TokenViews()"


@dataclass(repr=False)
class LabelSetDataset(ArrayDataset):
    """An :class:`~hierviz.data.ArrayDataset` whose samples may lie on several label paths (HTC corpora).

    ``labels`` keep one leaf per sample (the first of its leaves in ``classes`` order): what
    compare's single-leaf parts read (the probe, HF1, the radius, the Majority row).
    ``leaf_sets`` holds every leaf of each sample; a method with a multi-label classifier
    (HyILR) trains and is scored on the union of their root-to-leaf paths
    (:func:`hierviz.metrics.htc.leaf_path_targets`).

    Attributes
    ----------
    leaf_sets : numpy.ndarray, shape (N, len(classes)), bool
        ``leaf_sets[i, labels[i]]`` is True; every row has at least one True.

    Raises
    ------
    ValueError
        ``leaf_sets`` of another shape, an empty row, or a row without its sample's label.

    Examples
    --------
    >>> ds = LabelSetDataset(np.ones((2, 4, 2), np.int64), np.array([0, 1]), ["a", "b"],
    ...                      leaf_sets=np.array([[True, True], [False, True]]))
    >>> ds.subset([1]).leaf_sets.tolist(), ds.subset([True, False]).labels.tolist()
    ([[False, True]], [0])
    """

    leaf_sets: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        sets = np.asarray(self.leaf_sets, dtype=bool)
        if sets.shape != (len(self.labels), len(self.classes)):
            raise ValueError(f"leaf_sets must have shape ({len(self.labels)}, {len(self.classes)}), got {sets.shape}")
        if len(sets) and not sets[np.arange(len(sets)), self.labels].all():
            raise ValueError("leaf_sets: every sample's row must hold its own label (labels[i])")
        self.leaf_sets = sets

    def subset(self, idx: Any) -> LabelSetDataset:
        """:meth:`ArrayDataset.subset`, with the same rows of ``leaf_sets``."""
        names = [f.name for f in fields(ArrayDataset)]
        base = ArrayDataset.subset(ArrayDataset(**{k: getattr(self, k) for k in names}), idx)  # checks idx
        rows = np.arange(len(self))[np.asarray(idx.detach().cpu().numpy() if hasattr(idx, "detach") else idx)]
        return LabelSetDataset(**{k: getattr(base, k) for k in names}, leaf_sets=self.leaf_sets[rows])
