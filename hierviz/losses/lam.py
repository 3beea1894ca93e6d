"""Level-Aware Margin loss (paper 01, §3.3, Eqs. 9–11).

One prototype per ancestor at every level ℓ = 1..L−1 (root and leaf level excluded),
kept as EMA buffers in the ambient geometry, and a hinge that asks every embedding to
be closer to its own level-ℓ ancestor's prototype than to the nearest other prototype of
that level by a margin ``m_ℓ``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ._validation import _check_labels, _check_on_manifold, _check_real, _check_tree, _compiling, _resolve_geometry

__all__ = ["LAMLoss", "default_margins"]


def default_margins(num_levels: int) -> list[float]:
    """Default margins m_ℓ for levels 1..num_levels: 0.5 at the coarsest level down to 0.1.

    Paper 01 §3.4 uses m_ℓ ∈ [0.1, 0.5], larger at coarser levels.

    Parameters
    ----------
    num_levels : int, ≥ 0
        L − 1, the number of prototype levels.

    Returns
    -------
    list of float, length ``num_levels``, linearly spaced from 0.5 to 0.1 (``[0.5]`` for one level).
    """
    if num_levels <= 0:
        return []
    if num_levels == 1:
        return [0.5]
    return [float(v) for v in np.linspace(0.5, 0.1, num_levels)]


def _per_level(value: Any, n: int, name: str, default: list[float]) -> list[float]:
    if value is None:
        return list(default)
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    if np.ndim(value) == 0:
        return [_check_real(value, name, low=0.0)] * n
    vals = list(value)
    if len(vals) != n:
        raise ValueError(f"{name} must be a scalar or have one entry per level 1..L-1 ({n} entries), got {len(vals)}")
    return [_check_real(v, f"{name}[{i}]", low=0.0) for i, v in enumerate(vals)]


class LAMLoss(nn.Module):
    """LAM, Level-Aware Margin: a hinge toward each ancestor's EMA prototype, per level (paper 01, Eqs. 9–11).

    A regulariser for a contrastive loss, not a loss to train alone: it has no
    instance-discrimination term (paper 01 Eq. 12 adds it to HWC with weight λ_LAM).

    Prototypes
        For every level ℓ ∈ {1, …, L−1} the leaves are partitioned by their level-ℓ
        ancestor ``tree.ancestor_at_level(y, ℓ)``; one prototype ``c_{ℓ,a}`` per part. In an
        unbalanced tree a leaf shallower than ℓ is its own part at level ℓ (it "repeats
        itself", as in ``tree.leaf_paths``). A prototype is initialised with the mean
        (``geometry.group_mean``: arithmetic in Euclidean space, Karcher on the ball) of its
        samples in the first batch that contains any, then updated in training mode by
        ``geometry.ema_step`` with rate η: Eq. 9 (Euclidean) or one Karcher step at the
        prototype's own basepoint (Eq. 10). Updates use detached embeddings and happen
        *before* the hinge of the same call; the hinge sees the prototypes as constants
        (stop-grad, §3.4). In eval mode prototypes are frozen. They are buffers
        (``prototypes`` (P, D), ``proto_initialized`` (P,) bool) saved and restored by
        ``state_dict``; ``proto_node``/``proto_level`` say which node and level each row is.
    Hinge (Eq. 11)
        ``L^(ℓ) = (1/n) Σ_i [d(z_i, c_{ℓ,a_i}) − min_{b≠a_i} d(z_i, c_{ℓ,b}) + m_ℓ]_+`` and
        ``L = Σ_ℓ λ_ℓ L^(ℓ)``, with d = ``geometry.pairwise_dist`` and n = B·V (every view is
        a sample). A sample whose level has no other initialised prototype (a level with
        a single ancestor, or a batch that has not yet shown any other ancestor) contributes
        0, as does one whose own prototype is uninitialised (eval mode only).

    Zero loss (§3.4)
        The paper states ``min_{b≠a} d(c_a, c_b) > max_i d(z_i, c_{a_i}) + m_ℓ`` as sufficient
        for a zero level-ℓ loss; by the triangle inequality the sufficient condition is
        ``min_{b≠a} d(c_a, c_b) > 2 max_i d(z_i, c_{a_i}) + m_ℓ`` (tested in tests/test_lam.py).

    Parameters
    ----------
    tree : LabelTree
        Height L ≥ 1; with L = 1 there are no prototype levels and the loss is 0.
    geometry : Geometry or str
        Distance (``pairwise_dist``), means (``group_mean``) and EMA (``ema_step``).
    margins : float or sequence of L−1 floats ≥ 0, optional
        m_ℓ; default :func:`default_margins` (0.5 at level 1 down to 0.1 at level L−1).
    level_weights : float or sequence of L−1 floats ≥ 0, optional
        λ_ℓ; default 1 for every level.
    eta : float in (0, 1], default 0.05
        EMA rate η (paper range 0.01–0.1).
    dim : int, optional
        Ambient dimension D of the embeddings (d, or d+1 on the hyperboloid). If None the
        buffer is sized on the first call (and on ``load_state_dict``).
    mean_steps : int ≥ 1, default 3
        Karcher steps for the first-batch initialisation (T_mean of Eq. 3).

    Raises
    ------
    ValueError
        Negative margins/weights, η outside (0, 1], wrong shapes, NaN/inf in ``z``, labels
        outside the tree, ``z`` whose last dimension differs from the prototypes'.
    TypeError
        Missing tree, non-numeric hyperparameters, non-integer labels.

    Notes
    -----
    Calling convention: ``loss(z, labels)`` with ``z`` (B, V, D) or (B, D) float32/float64 on the manifold and
    ``labels`` (B,) long leaf indices → scalar tensor ≥ 0. ``last_level_losses`` then holds
    the detached per-level values ``L^(ℓ)`` (L−1,). ``margins`` and ``level_weights`` are
    validated, settable properties (e.g. from a slider). In Euclidean mode the distance is
    ``‖û − v̂‖`` (unit-normalised), so a prototype's norm (< 1 for a mean of unit vectors)
    does not matter, only its direction.

    Examples
    --------
    >>> import torch
    >>> from hierviz.geometry import get_geometry
    >>> from hierviz.losses import LAMLoss
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"root": {"benign": ["a", "f"], "malignant": ["d", "l"]}})
    >>> geometry = get_geometry("euclidean")
    >>> z = torch.nn.functional.normalize(torch.randn(4, 2, 8, generator=torch.Generator().manual_seed(0)), dim=-1)
    >>> loss = LAMLoss(tree, geometry, margins=0.5)
    >>> round(loss(z, torch.tensor([0, 1, 2, 3])).item(), 3)  # first call: prototypes = batch means
    0.15
    >>> loss.proto_names
    [(1, 'benign'), (1, 'malignant')]
    """

    input_kind = "embeddings"

    def __init__(
        self,
        tree: Any,
        geometry: Any,
        *,
        margins: Any = None,
        level_weights: Any = None,
        eta: float = 0.05,
        dim: int | None = None,
        mean_steps: int = 3,
    ):
        super().__init__()
        self.tree = _check_tree(tree, True, type(self).__name__, needs=("ancestor_at_level", "height", "num_leaves"))
        self.geometry = _resolve_geometry(geometry)
        self.eta = _check_real(eta, "eta", low=0.0, strict=True, high=1.0)
        if isinstance(mean_steps, bool) or not isinstance(mean_steps, (int, np.integer)) or mean_steps < 1:
            raise ValueError(f"mean_steps must be an integer >= 1, got {mean_steps!r}")
        self.mean_steps = int(mean_steps)
        L = int(tree.height)
        self.num_levels = max(L - 1, 0)
        C = int(tree.num_leaves)
        margins_l = _per_level(margins, self.num_levels, "margins", default_margins(self.num_levels))
        weights_l = _per_level(level_weights, self.num_levels, "level_weights", [1.0] * self.num_levels)

        all_leaves = torch.arange(C)
        slot_rows, nodes, levels = [], [], []
        for lvl in range(1, L):
            anc = tree.ancestor_at_level(all_leaves, lvl)  # (C,) node index per leaf
            uniq, inv = torch.unique(anc, sorted=True, return_inverse=True)
            slot_rows.append(inv + len(nodes))
            nodes.extend(uniq.tolist())
            levels.extend([lvl] * len(uniq))
        P = len(nodes)
        leaf_slot = torch.stack(slot_rows) if slot_rows else torch.zeros(0, C, dtype=torch.long)
        self.num_prototypes = P
        self.register_buffer("leaf_slot", leaf_slot, persistent=False)  # (L-1, C) prototype row of each leaf
        self.register_buffer("proto_node", torch.tensor(nodes, dtype=torch.long), persistent=False)
        self.register_buffer("proto_level", torch.tensor(levels, dtype=torch.long), persistent=False)
        self._margins = margins_l
        self._level_weights = weights_l
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1):
            raise ValueError(f"dim must be a positive integer or None, got {dim!r}")
        self.register_buffer("prototypes", self._origin_rows(P, 0 if dim is None else int(dim), torch.float32, None))
        self.register_buffer("proto_initialized", torch.zeros(P, dtype=torch.bool))
        self.last_level_losses: torch.Tensor | None = None

    # ------------------------------------------------------------------ hyperparameters
    @property
    def margins(self) -> torch.Tensor:
        """(L−1,) float64 margins m_ℓ for levels 1..L−1; settable (scalar or one per level, ≥ 0)."""
        return torch.tensor(self._margins, dtype=torch.float64)

    @margins.setter
    def margins(self, value: Any) -> None:
        self._margins = _per_level(value, self.num_levels, "margins", default_margins(self.num_levels))

    @property
    def level_weights(self) -> torch.Tensor:
        """(L−1,) float64 level weights λ_ℓ; settable (scalar or one per level, ≥ 0)."""
        return torch.tensor(self._level_weights, dtype=torch.float64)

    @level_weights.setter
    def level_weights(self, value: Any) -> None:
        self._level_weights = _per_level(value, self.num_levels, "level_weights", [1.0] * self.num_levels)

    def extra_repr(self) -> str:
        return (
            f"levels={self.num_levels}, prototypes={self.num_prototypes}, margins={self._margins}, "
            f"level_weights={self._level_weights}, eta={self.eta}, geometry={self.geometry!r}"
        )

    # ------------------------------------------------------------------ buffers / state
    @property
    def proto_names(self) -> list[tuple[int, str]]:
        """``(level, node name)`` of each prototype row, in buffer order."""
        names = self.tree.nodes
        return [(int(l), names[int(n)]) for l, n in zip(self.proto_level.tolist(), self.proto_node.tolist())]

    def reset_prototypes(self) -> None:
        """Forget all prototypes; the next training call re-initialises them from its batch means."""
        self.proto_initialized.zero_()
        p = self.prototypes
        self.prototypes.copy_(self._origin_rows(p.shape[0], p.shape[1], p.dtype, p.device))

    def _origin_rows(self, rows: int, D: int, dtype: torch.dtype, device: Any) -> torch.Tensor:
        """(rows, D) copies of the geometry's origin: a valid placeholder for unseen prototypes."""
        if D == 0:
            return torch.zeros(rows, 0, dtype=dtype, device=device)
        extra = int(self.geometry.point_dim(1)) - 1 if hasattr(self.geometry, "point_dim") else 0
        if hasattr(self.geometry, "origin"):
            o = self.geometry.origin(D - extra, dtype=dtype, device=device)
        else:
            o = torch.zeros(D, dtype=dtype, device=device)
        return o.expand(rows, D).clone()

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        key = prefix + "prototypes"
        if key in state_dict and state_dict[key].shape != self.prototypes.shape:
            incoming = state_dict[key]
            if incoming.shape[0] != self.num_prototypes:
                raise ValueError(
                    f"state_dict {key} has {incoming.shape[0]} prototypes but this tree needs "
                    f"{self.num_prototypes} (levels 1..L-1); was it saved with another tree?"
                )
            self.prototypes = torch.zeros_like(incoming, device=self.prototypes.device)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    # ------------------------------------------------------------------ internals
    def _check_hparams(self) -> None:
        _check_real(self.eta, "eta", low=0.0, strict=True, high=1.0)

    def _flatten(self, z: Any, labels: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if not isinstance(z, torch.Tensor):
            z = torch.as_tensor(np.asarray(z))
        if not torch.is_floating_point(z):
            raise TypeError(f"z must be a floating-point tensor, got dtype {z.dtype}")
        if z.ndim == 2:
            z = z[:, None, :]
        if z.ndim != 3 or z.shape[0] == 0 or z.shape[-1] == 0:
            raise ValueError(f"z must have shape (B, V, D) or (B, D) with B >= 1 and D >= 1; got {tuple(z.shape)}")
        B, V, D = z.shape
        if self.leaf_slot.device != z.device:  # follow the embeddings (buffers move with the module)
            self.to(z.device)
        lab = _check_labels(labels, B, int(self.tree.num_leaves), z.device)
        flat = z.transpose(0, 1).reshape(V * B, D)
        if not _compiling():  # value checks read the tensor on the host: eager only (no sync when compiled)
            if not bool(torch.isfinite(z).all()):
                n_bad = int((~torch.isfinite(z)).sum())
                raise ValueError(f"z contains NaN or inf ({n_bad} entries); check the encoder output")
            _check_on_manifold(flat, self.geometry, "z")
        if self.prototypes.shape[1] == 0:
            self.prototypes = self._origin_rows(self.num_prototypes, D, z.dtype, z.device)
        elif self.prototypes.shape[1] != D:
            raise ValueError(f"z has last dimension {D} but the prototypes have {self.prototypes.shape[1]} (dim)")
        return flat, lab.repeat(V)

    def slots(self, labels: torch.Tensor) -> torch.Tensor:
        """Prototype row of each label's ancestor at every level.

        Parameters
        ----------
        labels : LongTensor (n,)
            Leaf indices.

        Returns
        -------
        LongTensor (L−1, n); row ℓ−1 holds indices into ``prototypes``.
        """
        return self.leaf_slot[:, labels]

    @torch.no_grad()
    def update_prototypes(self, z: torch.Tensor, labels: torch.Tensor) -> None:
        """Initialise unseen prototypes with the batch means, EMA-update the others (Eqs. 9–10).

        Parameters
        ----------
        z : torch.Tensor (B, V, D) or (B, D)
            Embeddings on the manifold (detached here).
        labels : LongTensor (B,)
            Leaf indices.
        """
        flat, lab = self._flatten(z, labels)
        self._update(flat.detach(), self.slots(lab))

    @torch.no_grad()
    def _update(self, flat: torch.Tensor, slots: torch.Tensor) -> None:
        P = self.num_prototypes
        n_lvl, n = slots.shape
        x = flat.unsqueeze(0).expand(n_lvl, n, flat.shape[1]).reshape(n_lvl * n, flat.shape[1])
        idx = slots.reshape(-1)
        present = torch.zeros(P, dtype=torch.bool, device=idx.device).index_fill_(0, idx, True)
        init = self.proto_initialized
        protos = self.prototypes.to(flat.dtype)
        origin = self._origin_rows(1, protos.shape[1], flat.dtype, flat.device)
        base = torch.where(init[:, None], protos, origin)  # unseen rows: a valid placeholder point
        moved = self.geometry.ema_step(base, x, idx, self.eta)  # Eq. 9 / Eq. 10; absent groups unchanged
        new = torch.where((present & init)[:, None], moved, base)
        fresh = present & ~init
        # first batch that shows these ancestors: initialise with the group mean (Karcher,
        # ``mean_steps`` steps, no tolerance: no host sync). Compiled, it runs every step (a
        # branch on ``fresh`` would read it on the host); eager, only when needed.
        if _compiling() or bool(fresh.any()):
            means, _ = self.geometry.group_mean(x, idx, P, steps=self.mean_steps, tol=None, allow_empty=True)
            new = torch.where(fresh[:, None], means.to(flat.dtype), new)
        self.prototypes.copy_(new.to(self.prototypes.dtype))
        self.proto_initialized |= present

    # ------------------------------------------------------------------ forward
    def _hinges(self, flat: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """(n, Lm) hinge values of Eq. 11 (0 where a level has no valid negative prototype)."""
        protos = self.prototypes.to(flat.dtype).detach()
        init = self.proto_initialized
        dist = self.geometry.pairwise_dist(flat, protos)  # (n, P)
        slots_t = slots.T  # (n, Lm)
        d_pos = dist.gather(1, slots_t)  # (n, Lm)
        levels = torch.arange(1, self.num_levels + 1, device=flat.device)
        same_level = self.proto_level[None, :] == levels[:, None]  # (Lm, P)
        rows = torch.arange(self.num_prototypes, device=flat.device)
        neg = same_level[None] & init[None, None, :] & (rows[None, None, :] != slots_t[:, :, None])  # (n, Lm, P)
        has_neg = neg.any(dim=-1)
        d_neg = dist[:, None, :].masked_fill(~neg, float("inf")).amin(dim=-1)
        d_neg = torch.where(has_neg, d_neg, torch.zeros_like(d_neg))
        margins = self.margins.to(device=flat.device, dtype=flat.dtype)
        hinge = torch.relu(d_pos - d_neg + margins[None, :])
        valid = has_neg & init[slots_t]
        hinge = torch.where(valid, hinge, torch.zeros_like(hinge))
        return hinge

    def sample_hinges(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Per-sample hinge ``[d⁺ − d⁻ + m_ℓ]₊`` at every level with the current prototypes (no update).

        The quantity whose per-level mean, weighted by λ_ℓ, is the loss (Eq. 11); teaching
        widgets draw it. A shallow leaf of an unbalanced tree uses its own slot at deeper
        levels (as in :meth:`forward`); a level without a second prototype contributes 0.

        Parameters
        ----------
        z : torch.Tensor, shape (B, V, D) or (B, D)
        labels : LongTensor (B,)

        Returns
        -------
        torch.Tensor, shape (B·V, L−1), ≥ 0, detached; column ℓ−1 is level ℓ.
        """
        self._check_hparams()
        flat, lab = self._flatten(z, labels)
        if self.num_prototypes == 0:
            return flat.new_zeros(flat.shape[0], 0)
        with torch.no_grad():
            return self._hinges(flat.detach(), self.slots(lab))

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """LAM loss of a batch (Eq. 11); in training mode updates the prototypes first.

        Parameters
        ----------
        z : torch.Tensor, shape (B, V, D) or (B, D), float32/float64
            Embeddings on the manifold.
        labels : LongTensor (B,)
            Leaf indices in [0, C-1].

        Returns
        -------
        torch.Tensor, scalar ≥ 0, differentiable w.r.t. ``z`` only.
        """
        self._check_hparams()
        flat, lab = self._flatten(z, labels)
        if self.num_prototypes == 0:
            self.last_level_losses = flat.new_zeros(0)
            return flat.sum() * 0.0
        slots = self.slots(lab)  # (Lm, n)
        if self.training:
            self._update(flat.detach(), slots)
        hinge = self._hinges(flat, slots)
        per_level = hinge.mean(dim=0)  # (Lm,)
        self.last_level_losses = per_level.detach()
        return (self.level_weights.to(device=flat.device, dtype=flat.dtype) * per_level).sum()
