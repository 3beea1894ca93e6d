"""``"20news-text"``: 20 Newsgroups as token sequences, a text dataset of ``hierviz compare``.

The same messages, groups and tree as ``"20news"`` (:mod:`hierviz.data.loaders.newsgroups`),
but each sample is the message's word tokens, ``[CLS] w1 … w_{s−1}`` right-padded to ``s``
(``image_size``, default 64), through a :class:`hierviz.data.text.WordVocab` fitted on the
official training messages (at most :data:`VOCAB` words, ``min_df = 2``). The dataset declares
``inputs="text"``, so ``compare`` picks the text encoder (``hyilr-text``,
:mod:`hierviz.models.text`) and the HyILR methods attend over the tokens (Paper 05 Eq. 8), as
``hierviz htc`` does.

Examples
--------
>>> ds = load_20news_text(synthetic=True, image_size=16)
>>> ds.is_text, ds.images.shape[1:], ds.images[0, 0].tolist()  # [CLS] first, mask 1
(True, (16, 2), [1, 1])
"""

from __future__ import annotations

from os import PathLike

from hierviz.data.base import ArrayDataset, register_dataset
from hierviz.data.loaders import newsgroups as ng
from hierviz.data.text import WordVocab, pack_tokens

__all__ = ["load_20news_text", "VOCAB"]

#: Words kept by the tokenizer (Paper 05's ``hierviz htc --preset medium`` vocabulary).
VOCAB = 8000


@register_dataset("20news-text", default_tree="20news", info=ng.NEWS_INFO, inputs="text")
def load_20news_text(
    data_dir: str | PathLike | None = None, *, image_size: int | None = None, synthetic: bool | None = None
) -> ArrayDataset:
    """20 Newsgroups as token sequences (a text dataset; see the module notes).

    Parameters
    ----------
    data_dir : str or PathLike, optional
        As :func:`hierviz.data.loaders.newsgroups.load_20news`.
    image_size : int, optional
        The sequence length ``s`` (``[CLS]`` included, >= 8; default 64): ``--image-size``.
    synthetic : bool or None, default None
        As :func:`hierviz.data.loaders.newsgroups.load_20news`.

    Returns
    -------
    ArrayDataset
        ``images`` int64 ``(N, s, 2)`` (token id, padding mask), 20 classes (sorted group
        names), ``official_split`` train/test.

    Raises
    ------
    FileNotFoundError
        As :func:`hierviz.data.loaders.newsgroups.load_20news`.
    ValueError
        ``image_size`` below 8.
    """
    s = 64 if image_size is None else image_size
    if isinstance(s, bool) or not isinstance(s, int) or s < 8:
        raise ValueError(f"image_size (the sequence length of 20news-text) must be an integer >= 8, got {s!r}")
    texts, labels, groups, split, stand_in = ng.read_corpus(data_dir, synthetic)
    name = "20news-text (synthetic stand-in)" if stand_in else "20news-text"
    vocab = WordVocab(VOCAB).fit([t for t, p in zip(texts, split, strict=True) if p == "train"])
    ids, mask = vocab.encode(texts, s)
    return ArrayDataset(
        pack_tokens(ids.numpy(), mask.numpy()),
        labels,
        groups,
        name=name,
        citation=ng.NEWS_CITATION,
        licence=ng.NEWS_LICENCE,
        official_split=split,
    )
