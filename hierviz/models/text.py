r"""Text encoders and the HyILR classifier (Paper 05 (HyILR) §4.1, Eqs. 8–9).

* :class:`WordVocab` — a word-level tokenizer trained on the training split (scikit-learn's
  ``CountVectorizer`` analyzer and vocabulary); ``[PAD] = 0``, ``[CLS] = 1``, ``[UNK] = 2``.
* :class:`TransformerTextEncoder` — a small transformer encoder trained from scratch (no
  download): token + position embeddings, ``nn.TransformerEncoder``, padding masked. Returns
  the contextual token features ``X ∈ R^{B×s×h}``; position 0 is ``[CLS]``.
* :class:`BertTextEncoder` / :class:`BertTokenizerAdapter` — a local BERT checkpoint through
  ``transformers`` (imported lazily; not a hierviz dependency), for users who have one.
* :class:`HyILRModel` — label–text attention ``A = X W_L``, ``F = softmax(Aᵀ) X`` (Eq. 8, padding
  masked), the classifier ``ℓ = W_cᵀ vec(F) + b`` (Eq. 9; sigmoid outputs), and the label
  features ``W_Lᵀ`` shared with the attention (Eq. 12 projects them). ``attention=False`` is the
  "w/o label–text att." ablation: ``F = X_[CLS] ⊙ W_Lᵀ`` (§5.4).
* :class:`HyILRHead` — the same classifier and label features on one feature vector per sample
  (``hierviz compare``'s vector and image encoders; ``h`` set at the first call), or on the
  token features of a text encoder, and :func:`label_text_features`, Eq. 8 shared by both.
* :class:`TokenEncoder` — ``hierviz compare``'s text encoder (registered as ``"hyilr-text"``):
  a :class:`TransformerTextEncoder` on a text dataset's ``(B, 1, s, 2)`` samples
  (:mod:`hierviz.data.text`), returning the token features and the padding mask; the model's
  ``features`` are ``X_[CLS]`` and the HyILR methods attend over the tokens.

Examples
--------
>>> import torch
>>> vocab = WordVocab(max_size=50).fit(["the cat sat", "the dog ran"])
>>> ids, mask = vocab.encode(["the cat ran fast"], max_len=6)
>>> ids.tolist(), mask.tolist()
([[1, 7, 3, 5, 2, 0]], [[True, True, True, True, True, False]])
>>> enc = TransformerTextEncoder(len(vocab), h=8, layers=1, heads=2, max_len=6)
>>> model = HyILRModel(enc, num_labels=3)
>>> out = model(ids, mask)
>>> out["logits"].shape, out["text"].shape, out["labels"].shape
(torch.Size([1, 3]), torch.Size([1, 8]), torch.Size([3, 8]))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from os import PathLike

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedParameter

from hierviz.data.text import CLS, PAD, UNK, WordVocab  # noqa: F401 (the tokenizer lives in data/, re-exported)
from hierviz.models.encoders import ENCODERS, register_encoder

Tensor = torch.Tensor

__all__ = [
    "WordVocab",
    "TransformerTextEncoder",
    "BertTextEncoder",
    "BertTokenizerAdapter",
    "HyILRModel",
    "HyILRHead",
    "label_text_features",
    "TokenEncoder",
    "TEXT_VOCAB",
    "text_encoder",
]


class TransformerTextEncoder(nn.Module):
    """A small transformer encoder trained from scratch; ``(ids, mask) → X`` of shape ``(B, s, h)``.

    Parameters
    ----------
    vocab_size : int
    h : int, default 128
        Feature size.
    layers : int, default 2
    heads : int, default 4
        Must divide ``h``.
    max_len : int, default 256
        Longest sequence (learned position embeddings).
    dropout : float, default 0.1
    """

    def __init__(
        self, vocab_size: int, h: int = 128, layers: int = 2, heads: int = 4, max_len: int = 256, dropout: float = 0.1
    ) -> None:
        super().__init__()
        if h % heads:
            raise ValueError(f"heads ({heads}) must divide h ({h})")
        self.h, self.max_len = h, max_len
        self.tok = nn.Embedding(vocab_size, h, padding_idx=PAD)
        self.pos = nn.Embedding(max_len, h)
        layer = nn.TransformerEncoderLayer(
            h, heads, dim_feedforward=2 * h, dropout=dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(h)
        self.drop = nn.Dropout(dropout)

    def forward(self, ids: Tensor, mask: Tensor) -> Tensor:
        """``ids``, ``mask`` ``(B, s)`` → token features ``(B, s, h)``."""
        if ids.shape[1] > self.max_len:
            raise ValueError(f"sequence length {ids.shape[1]} exceeds the encoder's max_len {self.max_len}")
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.drop(self.tok(ids) + self.pos(pos)[None])
        return self.norm(self.encoder(x, src_key_padding_mask=~mask))


def _transformers():
    try:
        import transformers  # optional: not a hierviz dependency; needed only for a BERT checkpoint
    except ImportError:
        raise ImportError(
            "a BERT checkpoint needs the 'transformers' package, which hierviz does not install: "
            "pip install transformers (or use the from-scratch encoder: leave --bert unset)"
        ) from None
    return transformers


class BertTokenizerAdapter:
    """``encode(texts, max_len) → (ids, mask)`` with a local checkpoint's tokenizer (``transformers``)."""

    def __init__(self, path: str | PathLike) -> None:
        self.tok = _transformers().AutoTokenizer.from_pretrained(str(path), local_files_only=True)

    def __len__(self) -> int:
        return len(self.tok)

    def fit(self, texts: Sequence[str]) -> BertTokenizerAdapter:
        """No-op (the checkpoint's vocabulary is fixed); returns ``self``."""
        return self

    def encode(self, texts: Sequence[str], max_len: int = 256) -> tuple[Tensor, Tensor]:
        """As :meth:`WordVocab.encode`; position 0 is BERT's ``[CLS]``."""
        b = self.tok(list(texts), max_length=max_len, truncation=True, padding="max_length", return_tensors="pt")
        return b["input_ids"], b["attention_mask"].bool()


class BertTextEncoder(nn.Module):
    """A local BERT checkpoint (``transformers.AutoModel``, no download): ``(ids, mask) → (B, s, h)``.

    Parameters
    ----------
    path : str or PathLike
        A folder with ``config.json`` and the weights (``local_files_only=True``).

    Raises
    ------
    ImportError
        ``transformers`` is not installed (the message says how to install it).
    """

    def __init__(self, path: str | PathLike) -> None:
        super().__init__()
        self.bert = _transformers().AutoModel.from_pretrained(str(path), local_files_only=True)
        self.h = int(self.bert.config.hidden_size)

    def forward(self, ids: Tensor, mask: Tensor) -> Tensor:
        return self.bert(input_ids=ids, attention_mask=mask.long()).last_hidden_state


class HyILRModel(nn.Module):
    r"""HyILR's classifier: label–text attention (Eq. 8) and a linear layer on ``vec(F)`` (Eq. 9).

    Parameters
    ----------
    encoder : nn.Module
        ``(ids, mask) → X`` of shape ``(B, s, h)`` with an attribute ``h``.
    num_labels : int
        ``c``, the labels (tree nodes without the root).
    attention : bool, default True
        ``False``: ``F = X_[CLS] ⊙ W_Lᵀ`` (the "w/o label–text att." ablation).
    dropout : float, default 0.1
        On ``vec(F)`` before the classifier.

    Notes
    -----
    ``W_L ∈ R^{h×c}`` (Xavier init) serves both the attention of Eq. 8 and, transposed, as the
    label features ``W_Lᵀ`` the contrastive loss projects (Eq. 12). The text feature is the
    ``[CLS]`` token ``X[:, 0]``. Padding tokens get ``−∞`` attention scores.

    ``shared_outputs`` names the outputs that are not per sample (``"labels"``): a data-parallel
    run gathers every other output over the ranks and leaves these alone
    (:func:`hierviz.training.distributed.gather_batch`).
    """

    shared_outputs = ("labels",)

    def __init__(self, encoder: nn.Module, num_labels: int, attention: bool = True, dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder
        h = int(encoder.h)
        self.h, self.num_labels, self.attention = h, int(num_labels), bool(attention)
        self.W_L = nn.Parameter(torch.empty(h, num_labels))
        nn.init.xavier_uniform_(self.W_L)
        self.drop = nn.Dropout(dropout)
        self.classifier = nn.Linear(num_labels * h, num_labels)  # W_c, b of Eq. 9

    def label_features(self) -> Tensor:
        """``W_Lᵀ``, shape ``(c, h)``."""
        return self.W_L.t()

    def forward(self, ids: Tensor, mask: Tensor) -> dict[str, Tensor]:
        """Logits and the features the contrastive loss uses.

        Parameters
        ----------
        ids, mask : Tensor, shape (B, s)

        Returns
        -------
        dict
            ``logits`` (B, c) (``sigmoid`` gives ŷ), ``text`` (B, h) = ``X_[CLS]``, ``labels``
            (c, h) = ``W_Lᵀ``, and with attention ``attention`` (B, c, s) = ``softmax(Aᵀ)``.
        """
        X = self.encoder(ids, mask)
        out: dict[str, Tensor] = {"text": X[:, 0], "labels": self.label_features()}
        F, att = label_text_features(X, self.W_L, mask, attention=self.attention)
        if att is not None:
            out["attention"] = att
        out["logits"] = self.classifier(self.drop(F.flatten(1)))  # Eq. 9
        return out

    def extra_repr(self) -> str:
        return (
            f"h={self.h}, labels={self.num_labels}, attention={self.attention}, init_scale={1 / math.sqrt(self.h):.3g}"
        )


def label_text_features(
    X: Tensor, W_L: Tensor, mask: Tensor | None = None, attention: bool = True
) -> tuple[Tensor, Tensor | None]:
    r"""Text–label-aware features ``F`` of Eq. 8 (Paper 05 (HyILR) §4.1), or the §5.4 ablation.

    Parameters
    ----------
    X : Tensor, shape (B, s, h)
        Token features; position 0 is ``[CLS]``.
    W_L : Tensor, shape (h, c)
        The label matrix.
    mask : Tensor, shape (B, s), bool, optional
        ``False`` at padding tokens (their score is ``−∞``); ``None``: no padding.
    attention : bool, default True
        ``True``: :math:`A = X W_L`, :math:`F = \operatorname{softmax}(A^\top) X` (Eq. 8).
        ``False``: :math:`F = X_{[CLS]} \odot W_L^\top` ("w/o label–text att.").

    Returns
    -------
    F : Tensor, shape (B, c, h)
    att : Tensor, shape (B, c, s), or None without attention
        ``softmax(Aᵀ)`` over the tokens. With one token (``s = 1``) every weight is 1 and each
        row of ``F`` is ``X[:, 0]``.

    Examples
    --------
    >>> import torch
    >>> X, W = torch.tensor([[[1.0, 2.0]]]), torch.tensor([[1.0, 0.0, 3.0], [0.0, 1.0, 1.0]])
    >>> label_text_features(X, W)[0].tolist()  # one token: F repeats it for every label
    [[[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]]
    >>> label_text_features(X, W, attention=False)[0].tolist()  # X_[CLS] ⊙ W_Lᵀ
    [[[1.0, 0.0], [0.0, 2.0], [3.0, 2.0]]]
    """
    if not attention:
        return X[:, :1] * W_L.t()[None], None
    A = X @ W_L  # (B, s, c), Eq. 8
    if mask is not None:
        A = A.masked_fill(~mask[:, :, None], float("-inf"))
    att = torch.softmax(A.transpose(1, 2), dim=-1)  # (B, c, s): softmax(Aᵀ) over tokens
    return att @ X, att


class HyILRHead(LazyModuleMixin, nn.Module):
    r"""HyILR's label matrix and classifier (Eqs. 8–9) on one feature vector per sample.

    ``hierviz compare`` trains HyILR on the encoder features of any dataset (TF-IDF vectors
    through the MLP encoder, images through a CNN): each sample is one vector ``x ∈ R^h``, read
    as a sequence of one token. Eq. 8 then gives every label the weight 1 on that token, so
    ``F`` is ``x`` repeated for each of the ``c`` labels and Eq. 9 is a linear classifier of
    ``x``; ``W_L`` still enters the loss as the label features ``W_Lᵀ`` that Eq. 12 projects.
    ``attention=False`` (the "w/o label–text att." ablation) is ``F = x ⊙ W_Lᵀ``, as in §5.4.
    ``h`` is set at the first call (a lazy module, like ``nn.LazyLinear``).

    Parameters
    ----------
    num_labels : int
        ``c``, the labels (the tree's nodes without the root), ``>= 1``.
    attention : bool, default True
    dropout : float, default 0.1
        On ``vec(F)`` before the classifier (as :class:`HyILRModel`).

    Attributes
    ----------
    W_L : Parameter, shape (h, c)
        Xavier-uniform init.
    weight, bias : Parameter, shapes (c, c·h) and (c,)
        ``W_cᵀ`` and ``b`` of Eq. 9, initialised like ``nn.Linear``.

    Examples
    --------
    >>> import torch
    >>> head = HyILRHead(3)
    >>> head(torch.randn(4, 5)).shape, head.label_features().shape
    (torch.Size([4, 3]), torch.Size([3, 5]))
    """

    cls_to_become = None

    def __init__(self, num_labels: int, attention: bool = True, dropout: float = 0.1) -> None:
        super().__init__()
        if isinstance(num_labels, bool) or not isinstance(num_labels, int) or num_labels < 1:
            raise ValueError(
                f"num_labels must be an integer >= 1 (the tree's nodes without the root), got {num_labels!r}"
            )
        self.num_labels, self.attention = int(num_labels), bool(attention)
        self.W_L = UninitializedParameter()
        self.weight = UninitializedParameter()
        self.bias = UninitializedParameter()
        self.drop = nn.Dropout(dropout)

    @property
    def h(self) -> int | None:
        """The feature size, or None before the first call."""
        return None if self.has_uninitialized_params() else int(self.W_L.shape[0])

    def initialize_parameters(self, x: Tensor, *args, **kwargs) -> None:  # LazyModuleMixin, before the first forward
        if self.has_uninitialized_params():
            h, c = int(x.shape[-1]), self.num_labels
            with torch.no_grad():
                self.W_L.materialize((h, c), dtype=x.dtype, device=x.device)
                self.weight.materialize((c, c * h), dtype=x.dtype, device=x.device)
                self.bias.materialize((c,), dtype=x.dtype, device=x.device)
                nn.init.xavier_uniform_(self.W_L)
                nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # nn.Linear's init
                bound = 1.0 / math.sqrt(c * h)
                nn.init.uniform_(self.bias, -bound, bound)

    def label_features(self) -> Tensor:
        """``W_Lᵀ``, shape ``(c, h)``."""
        return self.W_L.t()

    def forward(self, x: Tensor, tokens: Tensor | None = None, mask: Tensor | None = None) -> Tensor:
        """Logits ``(B, c)`` of features ``x`` ``(B, h)`` (Eq. 9; ``sigmoid`` gives ŷ).

        With ``tokens`` ``(B, s, h)`` (a text encoder's token features, position 0 = ``[CLS]``)
        and their ``mask`` ``(B, s)`` bool, Eq. 8 attends over the tokens as :class:`HyILRModel`
        does; without, over the one token ``x``.
        """
        if x.ndim != 2:
            raise ValueError(f"x must be (B, h) feature vectors, got shape {tuple(x.shape)}")
        if tokens is None:
            tokens = x[:, None, :]
        elif tokens.ndim != 3 or tokens.shape[0] != x.shape[0] or tokens.shape[-1] != x.shape[-1]:
            raise ValueError(f"tokens must be (B, s, h) = ({x.shape[0]}, s, {x.shape[-1]}), got {tuple(tokens.shape)}")
        F, _ = label_text_features(tokens, self.W_L, mask, attention=self.attention)
        return nn.functional.linear(self.drop(F.flatten(1)), self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"labels={self.num_labels}, attention={self.attention}, h={self.h}"


#: Token ids the ``hyilr-text`` encoder embeds (the ``20news-text`` vocabulary: 8000 words + 3 specials).
TEXT_VOCAB = 8003


class TokenEncoder(nn.Module):
    """``hierviz compare``'s text encoder: a :class:`TransformerTextEncoder` on packed token samples.

    Parameters
    ----------
    h : int, default 64
        Feature size (``out_dim``).
    layers : int, default 1
    heads : int, default 4
        Must divide ``h``.
    max_len : int, default 512
        Longest sequence.
    vocab_size : int, default :data:`TEXT_VOCAB`

    Attributes
    ----------
    text : bool
        True: :func:`hierviz.experiments.config.default_encoder` picks it for text datasets.
    out_dim : int
        ``h``.

    Examples
    --------
    >>> import torch
    >>> enc = TokenEncoder(h=8, heads=2, vocab_size=20)
    >>> x = torch.tensor([[[[1, 1], [5, 1], [0, 0]]]])  # (B=1, 1, s=3, 2): [CLS] w PAD
    >>> X, mask = enc(x)
    >>> X.shape, mask.tolist()
    (torch.Size([1, 3, 8]), [[True, True, False]])
    """

    text = True

    def __init__(self, h: int = 64, layers: int = 1, heads: int = 4, max_len: int = 512, vocab_size: int = TEXT_VOCAB):
        super().__init__()
        self.net = TransformerTextEncoder(vocab_size, h=h, layers=layers, heads=heads, max_len=max_len)
        self.out_dim, self.vocab_size, self.max_len = int(h), int(vocab_size), int(max_len)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Token features ``(B, s, h)`` and mask ``(B, s)`` bool of samples ``x`` ``(B, 1, s, 2)`` (ids, mask).

        Raises
        ------
        ValueError
            A shape other than ``(B, 1, s, 2)``, a sequence longer than ``max_len`` or an id
            outside the vocabulary.
        """
        if x.ndim != 4 or x.shape[1] != 1 or x.shape[-1] != 2:
            raise ValueError(f"x must be (B, 1, s, 2) token ids and mask (a text dataset), got {tuple(x.shape)}")
        if x.shape[2] > self.max_len:
            raise ValueError(f"sequences of {x.shape[2]} tokens exceed the encoder's max_len={self.max_len}")
        ids, mask = x[:, 0, :, 0].long(), x[:, 0, :, 1].bool()
        return self.net(ids, mask), mask


@register_encoder("hyilr-text", inputs="text")
def _hyilr_text(*, width: int = 16, small_input: bool = True, pretrained=None) -> TokenEncoder:
    """A one-layer :class:`TokenEncoder` with ``h = 4 · width`` (64 at the presets' width 16), 4 heads."""
    if pretrained is not None:
        raise ValueError("pretrained: the hyilr-text encoder is trained from scratch; leave model.pretrained unset")
    return TokenEncoder(h=4 * int(width), layers=1, heads=4)


def text_encoder(h: int, layers: int, heads: int, vocab_size: int, max_len: int) -> str:
    """Register (once) a :class:`TokenEncoder` of these sizes and return its encoder name.

    ``hierviz htc`` (:mod:`hierviz.experiments.htc`) trains its presets' encoders
    through ``compare``: the name ``hyilr-text-h{h}-l{layers}-a{heads}-v{vocab_size}-s{max_len}``
    says every size, so a run's config names the encoder it trained. A later process must call
    this again before it builds that encoder (``hierviz htc`` does).

    Raises
    ------
    ValueError
        ``heads`` does not divide ``h``, or a size below 1.

    Examples
    --------
    >>> name = text_encoder(8, 1, 2, 20, 6)
    >>> name, ENCODERS.get(name)(width=2).net.tok.weight.shape
    ('hyilr-text-h8-l1-a2-v20-s6', torch.Size([20, 8]))
    """
    sizes = {"h": h, "layers": layers, "heads": heads, "vocab_size": vocab_size, "max_len": max_len}
    for k, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{k} must be a positive integer, got {v!r}")
    if h % heads:
        raise ValueError(f"heads ({heads}) must divide h ({h})")
    name = f"hyilr-text-h{h}-l{layers}-a{heads}-v{vocab_size}-s{max_len}"
    if name not in ENCODERS:

        def build(*, width: int = 16, small_input: bool = True, pretrained=None) -> TokenEncoder:
            if pretrained is not None:
                raise ValueError(
                    f"pretrained: the {name} encoder is trained from scratch; leave model.pretrained unset"
                )
            return TokenEncoder(**sizes)

        register_encoder(name, inputs="text")(build)
    return name
