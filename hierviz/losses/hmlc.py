"""HMC, HCE and HMCE: hierarchical multi-label contrastive losses (Paper 02 (HMLC), Eqs. 2-4; Zhang et al. 2022).

One SupCon term per level of the hierarchy: at level ``h`` two embeddings are positives when
their images share the level-``h`` label ``y^h``. The level terms are weighted by a penalty
``λ_h = f(1/h)`` (HMC), or each level's loss is bounded below by the largest loss of the
levels before it (HCE), or both (HMCE). :class:`HMLCLoss` has two modes, ``"paper"`` (the
equations) and ``"official"`` (the public code of Zhang et al. 2022,
``salesforce/hierarchicalContrastiveLearning``, ``losses/losses.py::HMLC``); every difference
is listed in the class docstring.

Per-level labels of a tree come from :func:`hierviz.hierarchy.level_labels`; G-HMLC
(:mod:`.ghmlc`) and A-HMLC (:mod:`.ahmlc`) call this loss with per-level feature masks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from hierviz.hierarchy.levels import LEVEL_ORDERS, level_label_matrix

from ._validation import (
    _NOT_GIVEN,
    DEFAULT_TAU,
    _check_choice,
    _check_embeddings,
    _check_labels,
    _check_real,
    _check_tau,
    _integer_input,
    _renamed_kwarg,
    _upcast,
)

__all__ = ["HMLCLoss", "LOSS_TYPES", "LAYER_PENALTIES", "HMLC_MODES", "layer_penalty_weights"]

#: Loss types: per-level weighted SupCon (HMC), lower-bounded by earlier levels (HCE), both (HMCE).
LOSS_TYPES = ("hmc", "hce", "hmce")
#: Level penalties λ_h = f(1/h): exp (the official training script), pow2 (the official default), linear.
LAYER_PENALTIES = ("exp", "pow2", "linear")
#: "paper": Eqs. 2-4 as written; "official": the salesforce code bit for bit.
HMLC_MODES = ("paper", "official")

#: Zhang et al.'s HMLC builds ``SupConLoss(temperature)``: its base temperature stays at 0.07.
OFFICIAL_BASE_TEMPERATURE = 0.07


def _penalty_fn(layer_penalty: str):
    if layer_penalty == "exp":
        return torch.exp
    if layer_penalty == "pow2":
        return lambda x: torch.pow(2, x)
    return lambda x: x


def layer_penalty_weights(layer_penalty: str, levels: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The level penalties ``λ_h = f(1/h)``, ``h = 1..levels``.

    Parameters
    ----------
    layer_penalty : {"exp", "pow2", "linear"}
        ``f(x) = eˣ``, ``2ˣ`` or ``x``. ``"exp"`` is what Zhang et al.'s training script passes
        (``layer_penalty=torch.exp``), ``"pow2"`` their class default, and ``"linear"`` the
        "linear scaling" of Paper 02 (HMLC), §3 (our reading: the identity on the same
        argument ``1/h``, so ``λ_h = 1/h``).
    levels : int, ≥ 1
    dtype : torch.dtype, default float32
        Computed in this dtype (the official code computes them in float32).

    Returns
    -------
    torch.Tensor, shape (levels,), ``dtype``
        Decreasing in ``h``: the first level (the finest, class first) weighs most.

    Raises
    ------
    ValueError
        Unknown ``layer_penalty`` or ``levels < 1``.

    Examples
    --------
    >>> [round(v, 4) for v in layer_penalty_weights("pow2", 3).tolist()]
    [2.0, 1.4142, 1.2599]
    >>> layer_penalty_weights("linear", 2).tolist()
    [1.0, 0.5]
    """
    _check_choice(layer_penalty, "layer_penalty", LAYER_PENALTIES)
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 1:
        raise ValueError(f"levels must be an integer >= 1, got {levels!r}")
    f = _penalty_fn(layer_penalty)
    return f(1.0 / torch.arange(1, int(levels) + 1, dtype=dtype))


def _check_level_labels(level_labels: Any, batch: int, device: torch.device) -> torch.Tensor:
    level_labels = _integer_input(
        level_labels, "level_labels", ": (B, L) integer labels, one column per level", "integers"
    )
    if torch.is_floating_point(level_labels) or level_labels.dtype == torch.bool:
        raise TypeError(f"level_labels must be integers, got dtype {level_labels.dtype}")
    if level_labels.ndim != 2 or level_labels.shape[0] != batch or level_labels.shape[1] < 1:
        raise ValueError(
            f"level_labels must have shape (B, L) = ({batch}, L >= 1) to match z; got {tuple(level_labels.shape)}. "
            "Build it from leaf labels with hierviz.hierarchy.level_labels(tree, labels)"
        )
    return level_labels.to(device=device, dtype=torch.long)


class HMLCLoss(nn.Module):
    """Hierarchical multi-label contrastive loss: HMC, HCE or HMCE (Paper 02 (HMLC), Eqs. 2-4; Zhang et al. 2022).

    For level ``h = 1..H`` (column ``h-1`` of ``level_labels``), ``P^h(i)`` are the other
    embeddings whose image has the same level-``h`` label as anchor ``i``, ``A(i)`` all other
    embeddings, and the pair loss is ``ℓ_h(i, p) = −log exp(z_i·z_p/τ) / Σ_{a∈A(i)} exp(z_i·z_a/τ)``
    (Eq. 3 with its sign folded in, so ``ℓ ≥ 0``).

    * ``"hmc"`` (Eq. 2): ``L = (1/H) Σ_h λ_h · mean_i (1/|P^h(i)|) Σ_p ℓ_h(i, p)``;
    * ``"hce"``: Eq. 4 with ``λ_h = 1``;
    * ``"hmce"`` (Eq. 4): every pair loss is raised to at least the largest pair loss of the
      same anchor at the levels before: ``ℓ̃_h(i, p) = max(ℓ_h(i, p), M_{h-1}(i))`` with
      ``M_h(i) = max(M_{h-1}(i), max_{p∈P^h(i)} ℓ_h(i, p))``, ``M_0 = −∞``.

    ``λ_h = f(1/h)`` with ``f`` = ``exp``, ``2^x`` or the identity (:func:`layer_penalty_weights`).

    Parameters
    ----------
    loss_type : {"hmc", "hce", "hmce"}, default "hmce"
    layer_penalty : {"exp", "pow2", "linear"}, default "exp"
        The official training script uses ``torch.exp``; the official class default is
        ``pow2``; G-HMLC and A-HMLC use ``linear`` (Paper 02 (HMLC), §3).
    tau : float, > 0, default 0.1
        The temperature τ (``temperature`` before 0.3, still accepted with a DeprecationWarning).
    base_tau : float > 0 or None, default None
        τ_b: each level's loss is multiplied by ``tau / base_tau`` (Khosla et al. 2020's code's
        ``base_temperature``, this argument's name before 0.3, still accepted with a
        DeprecationWarning). None means no scaling in ``"paper"`` mode and 0.07 in
        ``"official"`` mode (what the official code always uses, see Notes).
    mode : {"paper", "official"}, default "paper"
    similarity : callable or None, default None
        ``f(x (N, d)) -> (N, N)``; None is the dot product ``z_i · z_a`` of Eq. 3 (the
        cosine on unit-norm embeddings). ``"official"`` mode always uses the dot product.
    tree : LabelTree, optional
        When given, ``forward`` also accepts leaf labels ``(B,)`` and derives the level
        labels itself (:func:`hierviz.hierarchy.level_labels` with ``order``).
    order : {"class", "category"}, default "class"
        Column order used with ``tree`` in ``"paper"`` mode (Paper 02 (HMLC), Table 2; "class
        first" is the order of its main results).

    Raises
    ------
    ValueError
        Unknown ``loss_type``/``layer_penalty``/``mode``/``order``; ``tau`` or ``base_tau``
        ≤ 0; ``z`` not ``(B, V, d)`` or with NaN/inf; ``level_labels`` not ``(B, L)``;
        ``"official"`` mode with one view or with ``masks``; ``masks`` of the wrong shape.
    TypeError
        Non-integer labels, non-numeric hyperparameters.

    Notes
    -----
    Calling convention: ``loss(z, level_labels, masks=None)``, ``z`` (B, V, d) float,
    ``level_labels`` (B, L) int (or (B,) leaf labels when ``tree`` is set), optional
    ``masks`` broadcastable to (L, B, V, d): level ``h`` then compares ``z ⊙ masks[h-1]``
    (G-HMLC / A-HMLC). Returns a scalar ≥ 0. Views are stacked view-major as everywhere in
    :mod:`hierviz.losses`; anchors are all ``B·V`` embeddings.

    Differences between the modes (``"official"`` = ``HMLC.forward`` of
    salesforce/hierarchicalContrastiveLearning, ``losses/losses.py``):

    1. **Which levels.** ``"paper"``: every column ``h = 1..L`` is a level. ``"official"``:
       step ``l = 1..L-1`` zeroes the last ``l`` columns, so the positives of step ``l``
       share the *prefix* of ``L - l`` columns (columns must be coarse first), the last
       column (the image id in their DeepFashion lists) never defines positives by itself,
       and the sum is divided by ``L`` although it has ``L - 1`` terms.
    2. **Unique-row filtering.** ``"official"``: after step ``l`` only the first row of each
       distinct prefix is kept (with all its views), so later, coarser steps contrast one
       image per finer label. ``"paper"``: every level sees the whole batch.
    3. **Temperature scaling.** ``"official"``: every level's SupCon is multiplied by
       ``τ / 0.07`` (``HMLC`` builds ``SupConLoss(temperature)``, whose ``base_temperature``
       stays 0.07 whatever ``HMLC(base_temperature=...)`` says). ``"paper"``: no factor
       unless ``base_tau`` is given.
    4. **HCE bound.** ``"official"``: the bound is on whole-batch level losses,
       ``L̃_l = max(L_l, max_{l'<l} L̃_{l'})``. ``"paper"``: Eq. 4's bound per anchor and
       pair (above). Eq. 4 writes ``max`` of the *log-probabilities* ``L^pair``; with the
       minus sign outside that would bound each loss from *above*, the opposite of the
       stated intent ("a higher level's loss is never smaller"), so we bound the pair
       losses ``−log p`` from below.
    5. **Anchors without positives.** ``"official"`` divides by ``|P(i)| = 0`` (NaN); we
       refuse one view per image there. ``"paper"`` skips such anchors (Khosla's mean over
       anchors that have a positive) and averages over anchors rather than summing (the
       ``Σ_i`` of Eq. 2), like Khosla et al.'s code; a batch without any positive gives 0.
    6. **Level order.** ``λ_h`` decreases with the column index in both modes; in
       ``"official"`` the first step is the finest prefix, so its natural order is "class
       first" for the penalties while its columns are written coarse first.

    Examples
    --------
    >>> import torch
    >>> from hierviz.losses import HMLCLoss
    >>> g = torch.Generator().manual_seed(0)
    >>> z = torch.nn.functional.normalize(torch.randn(4, 2, 8, generator=g), dim=-1)
    >>> y = torch.tensor([[0, 0], [1, 0], [2, 1], [2, 1]])  # class first: (class, category)
    >>> round(HMLCLoss("hmce", "exp", tau=0.5)(z, y).item(), 4)
    5.207
    >>> official = HMLCLoss("hmce", "exp", tau=0.07, mode="official")
    >>> round(official(z, y.flip(1)).item(), 4)  # official columns are coarse first
    9.4762
    """

    input_kind = "embeddings"

    def __init__(
        self,
        loss_type: str = "hmce",
        layer_penalty: str = "exp",
        tau: float = DEFAULT_TAU,
        base_tau: float | None = None,
        mode: str = "paper",
        *,
        similarity: Any = None,
        tree: Any = None,
        order: str = "class",
        temperature: Any = _NOT_GIVEN,
        base_temperature: Any = _NOT_GIVEN,
    ):
        super().__init__()
        tau = _renamed_kwarg(tau, temperature, new="tau", old="temperature", who="HMLCLoss", default=DEFAULT_TAU)
        base_tau = _renamed_kwarg(
            base_tau, base_temperature, new="base_tau", old="base_temperature", who="HMLCLoss", default=None
        )
        self.loss_type = _check_choice(loss_type, "loss_type", LOSS_TYPES)
        self.layer_penalty = _check_choice(layer_penalty, "layer_penalty", LAYER_PENALTIES)
        self.tau = _check_tau(tau, "tau")
        self.mode = _check_choice(mode, "mode", HMLC_MODES)
        if base_tau is None and mode == "official":
            base_tau = OFFICIAL_BASE_TEMPERATURE
        self.base_tau = None if base_tau is None else _check_real(base_tau, "base_tau", low=0.0, strict=True)
        if not (similarity is None or callable(similarity)):
            raise TypeError(f"similarity must be None or a callable (N, d) -> (N, N), got {type(similarity).__name__}")
        self.similarity = similarity
        self._tables: dict[tuple[str, str], torch.Tensor] = {}

        self.order = _check_choice(order, "order", LEVEL_ORDERS)
        if tree is not None and not hasattr(tree, "leaf_paths"):
            raise TypeError(f"tree must be a hierviz LabelTree, got {type(tree).__name__}")
        self.tree = tree
        self._terms = False

    @property
    def temperature(self) -> float:
        """Deprecated name of :attr:`tau` (read-only; τ is ``tau`` in every loss since 0.3)."""
        return self.tau

    @property
    def base_temperature(self) -> float | None:
        """Deprecated name of :attr:`base_tau` (read-only)."""
        return self.base_tau

    def extra_repr(self) -> str:
        return (
            f"loss_type={self.loss_type!r}, layer_penalty={self.layer_penalty!r}, tau={self.tau}, "
            f"base_tau={self.base_tau}, mode={self.mode!r}, order={self.order!r}"
        )

    # ------------------------------------------------------------------ labels
    def level_labels_of(self, labels: torch.Tensor, batch: int) -> torch.Tensor:
        """Level labels for ``forward``: ``(B, L)`` as given, or derived from leaf labels ``(B,)`` and ``tree``.

        With a tree, ``"paper"`` mode uses ``order``; ``"official"`` mode uses coarse-first
        columns followed by the image index (the last column of the official label lists),
        so that every level of the tree defines positives in some step.

        Raises
        ------
        ValueError
            Leaf labels without a ``tree``, or labels outside the tree.
        """
        if labels is not None and (labels.ndim if isinstance(labels, torch.Tensor) else np.ndim(labels)) == 1:
            if self.tree is None:
                raise ValueError(
                    "got leaf labels (B,) but HMLCLoss was built without tree=; pass level_labels (B, L) "
                    "or build the loss with tree=LabelTree"
                )
            lab = torch.as_tensor(labels)
            if lab.shape != (batch,):
                raise ValueError(f"labels must have shape (B,) = ({batch},) to match z, got {tuple(lab.shape)}")
            lab = _check_labels(lab, batch, self.tree.num_leaves, lab.device)
            if self.mode == "official":
                cols = self._level_table("category", lab.device)[lab]
                inst = torch.arange(batch, device=cols.device)[:, None] + self.tree.num_nodes
                return torch.cat([cols, inst], dim=1)
            return self._level_table(self.order, lab.device)[lab]
        return labels

    def _level_table(self, order: str, device: torch.device) -> torch.Tensor:
        """``level_label_matrix(tree, order)`` (C, L) on ``device``, cached (no tree walk in a compiled step)."""
        key = (order, str(device))
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = level_label_matrix(self.tree, order).to(device)
        return table

    # ------------------------------------------------------------------ forward
    def forward(self, z: torch.Tensor, level_labels: Any, masks: torch.Tensor | None = None) -> torch.Tensor:
        """Loss of one batch.

        Parameters
        ----------
        z : torch.Tensor, shape (B, V, d), float32/float64
            Embeddings (unit-norm for the cosine of Eq. 1).
        level_labels : LongTensor, shape (B, L)
            One label per level, column ``h-1`` = level ``h``; or leaf labels ``(B,)``
            when the loss was built with ``tree``.
        masks : torch.Tensor, optional
            Per-level feature weights broadcastable to ``(L, B, V, d)`` (``"paper"`` mode
            only): level ``h`` compares ``z ⊙ masks[h-1]``.

        Returns
        -------
        torch.Tensor
            Scalar ≥ 0, differentiable w.r.t. ``z`` and ``masks``.

        Raises
        ------
        ValueError, TypeError
            See the class docstring.
        """
        _check_choice(self.loss_type, "loss_type", LOSS_TYPES)
        _check_choice(self.layer_penalty, "layer_penalty", LAYER_PENALTIES)
        _check_tau(self.tau, "tau")
        flat, B, V = _check_embeddings(z, None, min_views=1, who="HMLCLoss")
        labels = _check_level_labels(self.level_labels_of(level_labels, B), B, flat.device)
        if self.mode == "official":
            if masks is not None:
                raise ValueError("masks are a paper-mode feature (G-HMLC / A-HMLC); use mode='paper'")
            if V < 2:
                raise ValueError(
                    f"mode='official' needs at least 2 views (z of shape (B, V>=2, d)), got V={V}: "
                    "the official code divides by |P(i)| = 0 otherwise"
                )
            return self._official(torch.as_tensor(z), labels)
        return self._paper(torch.as_tensor(z), labels, masks)

    def level_terms(self, z: torch.Tensor, level_labels: Any, masks: torch.Tensor | None = None) -> torch.Tensor:
        """The per-level terms whose sum is :meth:`forward` (for plots and teaching).

        Parameters
        ----------
        z, level_labels, masks
            As :meth:`forward`.

        Returns
        -------
        torch.Tensor
            ``"paper"``: shape ``(L,)``, entry ``h-1`` = ``λ_h · L_h / H`` (HCE/HMCE: with
            the bound of Eq. 4 applied). ``"official"``: shape ``(L-1,)``, one entry per
            step ``l``, ``λ_l · L̃_l / L``. ``level_terms(...).sum() == forward(...)``.

        Examples
        --------
        >>> import torch
        >>> z = torch.nn.functional.normalize(torch.randn(6, 2, 4), dim=-1)
        >>> y = torch.tensor([[0, 0], [0, 0], [1, 0], [2, 1], [2, 1], [3, 1]])
        >>> loss = HMLCLoss("hmc", "pow2", 0.5)
        >>> terms = loss.level_terms(z, y)
        >>> terms.shape, torch.allclose(terms.sum(), loss(z, y))
        (torch.Size([2]), True)
        """
        self._terms = True
        try:
            return self(z, level_labels, masks)
        finally:
            self._terms = False

    # ------------------------------------------------------------------ paper mode (Eqs. 2-4)
    def _sim(self, x: torch.Tensor) -> torch.Tensor:
        if self.similarity is None:
            return x @ x.transpose(-1, -2)
        if x.ndim == 2:
            return self.similarity(x)
        return torch.stack([self.similarity(xi) for xi in x])

    def _paper(self, z: torch.Tensor, labels: torch.Tensor, masks: torch.Tensor | None) -> torch.Tensor:
        B, V, d = z.shape
        H = labels.shape[1]
        N = B * V
        if masks is None:
            flat = z.transpose(0, 1).reshape(1, N, d)  # one similarity for every level
        else:
            masks = torch.as_tensor(masks, dtype=z.dtype, device=z.device)
            try:
                zm = torch.broadcast_to(z[None] * masks, (H, B, V, d))
            except RuntimeError as err:
                raise ValueError(
                    f"masks must broadcast to (L, B, V, d) = ({H}, {B}, {V}, {d}), got {tuple(masks.shape)}"
                ) from err
            flat = zm.transpose(1, 2).reshape(H, N, d)
        logits = self._sim(flat) / self.tau  # (1 or H, N, N)
        eye = torch.eye(N, dtype=torch.bool, device=z.device)
        logp = logits - torch.logsumexp(logits.masked_fill(eye, float("-inf")), dim=-1, keepdim=True)
        lab = labels.repeat(V, 1)  # view-major (N, H)
        pos = (lab.T[:, :, None] == lab.T[:, None, :]) & ~eye  # (H, N, N)
        pair = -logp.expand(H, N, N)
        if self.loss_type in ("hce", "hmce"):
            row_max = pair.masked_fill(~pos, float("-inf")).amax(dim=-1)  # (H, N)
            bound = torch.cummax(row_max, dim=0).values
            prev = torch.cat([torch.full_like(bound[:1], float("-inf")), bound[:-1]], dim=0)
            pair = torch.maximum(pair, prev[:, :, None])
        posf = pos.to(z.dtype)
        count = posf.sum(-1)  # (H, N)
        per_anchor = (pair * posf).sum(-1) / count.clamp_min(1)
        valid = count > 0
        level_loss = torch.where(valid, per_anchor, torch.zeros_like(per_anchor)).sum(-1) / valid.sum(-1).clamp_min(1)
        if self.base_tau is not None:
            level_loss = level_loss * (self.tau / self.base_tau)
        if self.loss_type == "hce":
            lam = torch.ones(H, dtype=z.dtype, device=z.device)
        else:
            lam = layer_penalty_weights(self.layer_penalty, H, z.dtype).to(z.device)
        terms = lam * level_loss / H
        return terms if self._terms else terms.sum()

    # ------------------------------------------------------------------ official mode
    def _official_supcon(self, feats: torch.Tensor, pos_b: torch.Tensor) -> torch.Tensor:
        """``SupConLoss.forward(features, mask=...)`` of the official code (contrast_mode='all'), vectorised."""
        b, V, _ = feats.shape
        contrast = torch.cat(torch.unbind(feats, dim=1), dim=0)
        adc = torch.div(torch.matmul(contrast, contrast.T), self.tau)
        logits_max, _ = torch.max(adc, dim=1, keepdim=True)
        logits = adc - logits_max.detach()
        mask = pos_b.to(feats.dtype).repeat(V, V)
        logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(b * V, device=feats.device).view(-1, 1), 0)
        mask = mask * logits_mask
        exp_logits = torch.exp(logits) * logits_mask
        log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True))
        mean_log_prob_pos = (mask * log_prob).sum(1) / mask.sum(1)
        loss = -(self.tau / self.base_tau) * mean_log_prob_pos
        return loss.view(V, b).mean()

    def _official(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        L = labels.shape[1]
        penalty = _penalty_fn(self.layer_penalty)
        cumulative = features.new_zeros(())
        terms = []
        max_lower = torch.tensor(float("-inf"), dtype=features.dtype, device=features.device)
        for step in range(1, L):  # a loop over levels (at most L-1), never over the batch
            prefix = labels[:, : L - step]
            pos_b = (prefix[:, None, :] == prefix[None, :, :]).all(-1)
            layer_loss = self._official_supcon(features, pos_b)
            if self.loss_type == "hmc":
                w = penalty(torch.tensor(1 / step).type(torch.float)).to(layer_loss.device)
                term = w * layer_loss
            elif self.loss_type == "hce":
                layer_loss = torch.max(max_lower, layer_loss)
                term = layer_loss
            else:
                layer_loss = torch.max(max_lower, layer_loss)
                w = penalty(torch.tensor(1 / step).type(torch.float)).to(layer_loss.device)
                term = w * layer_loss
            cumulative = cumulative + term
            terms.append(term / L)
            # keep the first row of every distinct (zero-padded) label row, in sorted order
            _, inverse = torch.unique(prefix, sorted=True, return_inverse=True, dim=0)
            n_unique = int(inverse.max()) + 1
            first = torch.full((n_unique,), labels.shape[0], dtype=torch.long, device=labels.device)
            first = first.scatter_reduce(0, inverse, torch.arange(labels.shape[0], device=labels.device), "amin")
            max_lower = torch.max(max_lower, layer_loss)
            labels = labels[first]
            features = features[first]
        if self._terms:
            return torch.stack(terms) if terms else features.new_zeros(0)
        return cumulative / L


class _MaskedHMLC(nn.Module):
    """Base of the HMLC losses that mask the features level by level (G-HMLC, A-HMLC).

    Holds ``features`` (a map applied to ``z`` before masking, or None) and ``hmlc``, the
    :class:`HMLCLoss` (``mode="paper"``) the subclass calls with its masks.
    """

    input_kind = "embeddings"

    def __init__(
        self, tree: Any, tau: float, temperature: Any, features: Any, loss_type: str, layer_penalty: str, order: str,
        similarity: Any,
    ):  # fmt: skip
        super().__init__()
        who = type(self).__name__
        tau = _renamed_kwarg(tau, temperature, new="tau", old="temperature", who=who, default=DEFAULT_TAU)
        if not (features is None or callable(features)):
            raise TypeError(f"features must be None or a callable z -> z', got {type(features).__name__}")
        self.features = features
        self.hmlc = HMLCLoss(loss_type, layer_penalty, tau, mode="paper", tree=tree, order=order, similarity=similarity)

    def _inputs(self, z: torch.Tensor, labels: Any) -> tuple[torch.Tensor, Any]:
        """``z`` (B, V, d) checked, half precision upcast to float32, through ``features``; its level labels."""
        _check_embeddings(z, None, min_views=1, who=type(self).__name__)
        z = _upcast(z)  # float16/bfloat16 -> float32 (A-HMLC's attention heads are float32)
        if self.features is not None:
            z = self.features(z)
        return z, self.hmlc.level_labels_of(labels, z.shape[0])
