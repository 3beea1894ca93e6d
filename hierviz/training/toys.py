r"""Two small trainers for the hyperbolic head's failure modes (notebook 12 and its radius panel), CPU-fast.

* :func:`train_toy_head` trains the library's own pieces - a linear "encoder" on
  :func:`hierviz.data.toys.toy_encoder_features`, :class:`hierviz.models.HyperbolicHead`,
  :class:`hierviz.losses.SupConLoss` on :math:`-d/\tau`, :class:`hierviz.losses.EntailmentConeLoss`
  and :class:`hierviz.losses.CentringLoss` - full batch, and records the learned log-scale, the
  clip fraction and the radius at every step.
* :class:`RadiusToyGrid` trains a 2-D toy for *every* setting of the radius panel's controls at
  once (one batched computation: the settings are a leading tensor dimension), so moving a
  slider of :func:`hierviz.viz.widgets.radius_panel` only looks up a finished embedding and
  draws it. Its head, SupCon and cone terms are the same formulas as the library's (tested
  against them), with one simplification: node prototypes are tangent means at the origin, not
  Karcher means.

They live in training, not next to the panel: figures draw what was trained, they never step an
optimiser.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import numpy as np
import torch

from hierviz.data.toys import toy_tangent_points
from hierviz.geometry import PoincareBall
from hierviz.geometry.poincare import math as pmath
from hierviz.losses import DEFAULT_TAU, CentringLoss, EntailmentConeLoss, SupConLoss
from hierviz.losses.radial import cone_energy
from hierviz.metrics.radius import (
    clip_fraction,
    edge_order,
    max_radius,
    node_prototype_radii,
    origin_distance,
    radius_depth_spearman,
    radius_gap,
)

__all__ = ["HEAD_KINDS", "train_toy_head", "RadiusToyGrid"]

#: The panel's head choices: the 0.2 hard clip, the smooth bound, the smooth bound with the data-initialised scale.
HEAD_KINDS = ("clip", "tanh", "tanh + auto scale")


def train_toy_head(
    x: torch.Tensor,
    labels: torch.Tensor,
    tree,
    head,
    *,
    tau: float = DEFAULT_TAU,
    cone_weight: float = 0.0,
    center_weight: float = 0.0,
    steps: int = 200,
    lr: float = 0.01,
    seed: int = 0,
) -> dict[str, Any]:
    r"""Train a linear encoder (identity at start) and ``head`` on toy features, full batch, with Adam.

    Loss: :class:`hierviz.losses.SupConLoss` on the head's geometry (:math:`-d/\tau`) +
    ``cone_weight`` · :class:`hierviz.losses.EntailmentConeLoss` + ``center_weight`` ·
    :class:`hierviz.losses.CentringLoss`. The head is trained as in a real run (its
    ``scale_init="auto"`` fires on the first step).

    Parameters
    ----------
    x : torch.Tensor, shape (n, dim)
        Raw features (e.g. :func:`hierviz.data.toys.toy_encoder_features`).
    labels : torch.LongTensor, shape (n,)
    tree : LabelTree
    head : hierviz.models.HyperbolicHead
        On a hyperbolic geometry; modified in place (it is trained).
    tau : float > 0, default 0.1
    cone_weight, center_weight : float ≥ 0, default 0
    steps : int ≥ 1, default 200
    lr : float > 0, default 0.01
    seed : int, default 0

    Returns
    -------
    dict
        ``z`` (n, D) final embeddings (float64, detached), ``log_scale``, ``clip_fraction``,
        ``radius_mean``, ``radius_std``, ``loss`` (lists, one entry per step, before the step's
        update), ``scale_grad`` (the gradient of the loss w.r.t. the log-scale at every step)
        and ``encoder`` (the trained linear layer).

    Raises
    ------
    ValueError
        Bad ``steps``, ``lr``, weights (and whatever the losses raise).
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    for name, w in (("cone_weight", cone_weight), ("center_weight", center_weight)):
        if not w >= 0:
            raise ValueError(f"{name} must be >= 0, got {w!r}")
    torch.manual_seed(seed)
    geo = head.geometry
    x = x.to(torch.float64)
    enc = torch.nn.Linear(x.shape[1], x.shape[1], dtype=torch.float64)
    with torch.no_grad():
        enc.weight.copy_(torch.eye(x.shape[1], dtype=torch.float64))
        enc.bias.zero_()
    head.train()
    supcon = SupConLoss(tree, geo, tau=tau)
    cone = EntailmentConeLoss(tree, geo) if cone_weight > 0 else None
    centre = CentringLoss(geo) if center_weight > 0 else None
    params = list(enc.parameters()) + [p for p in head.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    hist: dict[str, list] = {k: [] for k in ("log_scale", "clip_fraction", "radius_mean", "radius_std", "loss")}
    hist["scale_grad"] = []
    top = None
    for _ in range(steps):
        z = head(enc(x))
        if top is None:
            top = max_radius(geo, head.tangent_bound, dtype=z.dtype)
        loss = supcon(z.unsqueeze(1), labels)
        if cone is not None:
            loss = loss + cone_weight * cone(z, labels)
        if centre is not None:
            loss = loss + center_weight * centre(z)
        opt.zero_grad()
        loss.backward()
        with torch.no_grad():
            r = origin_distance(z.detach(), geo)
            hist["log_scale"].append(float(head.log_scale.detach()))
            hist["clip_fraction"].append(float((r >= top - 1e-3).double().mean()) if top is not None else 0.0)
            hist["radius_mean"].append(float(r.mean()))
            hist["radius_std"].append(float(r.std(unbiased=False)))
            hist["loss"].append(float(loss))
            g = head.log_scale.grad if isinstance(head.log_scale, torch.nn.Parameter) else None
            hist["scale_grad"].append(0.0 if g is None else float(g))
        opt.step()
    head.eval()
    with torch.no_grad():
        z = head(enc(x)).detach()
    return {"z": z, "encoder": enc, **hist}


# --------------------------------------------------------------------------- the batched 2-D toy
class RadiusToyGrid:
    r"""A 2-D toy trained once for every setting of the radius panel's controls, in one batch.

    The toy: ``n_per_leaf`` points per leaf, raw tangent features ``v_i = w_{y_i} + ε_i`` with one
    learnable 2-D centre ``w`` per leaf (started on the circle of radius ``raw_norm``, directions
    from :func:`hierviz.data.toys.toy_tangent_points`, depth *not* in the norm) and fixed noise ``ε_i``, and the
    head of :class:`hierviz.models.HyperbolicHead` on the Poincaré disk (c = 1): ``u = bound(e^s v)``,
    ``z = exp_0(u)`` with the clip ``min(1, ρ/‖·‖)`` or the smooth bound ``ρ tanh(‖·‖/ρ)``; ``s``
    learnable, started at ``log_scales`` or by the head's ``"auto"`` rule (median norm →
    ``init_radius``). The loss is SupCon on ``−d/τ`` + ``cone`` × the entailment-cone energy
    (leaf apex → sample and parent apex → child apex, apices halfway to the node prototypes,
    aperture K, edges below depth 1 whose parent has more samples than the child) +
    ``center_weight`` × the centring term, all as in :mod:`hierviz.losses.radial` except that a
    node's prototype is the tangent mean ``exp_0(mean log_0 z)`` (no Karcher steps).

    Every combination of ``HEAD_KINDS × clip_rs × log_scales × taus × cones`` ("tanh + auto scale"
    ignores the log-scale, so it is trained once per other setting) is a slice of one tensor
    problem, trained together for ``steps`` Adam steps: the settings never interact (Adam is
    element-wise and the total loss is a sum over settings).

    Parameters
    ----------
    tree : LabelTree
    clip_rs, log_scales, taus, cones : sequence of float
        The slider grids: bound ρ > 0; log₁₀ of the initial scale; τ > 0; cone weight ≥ 0.
    n_per_leaf : int, default 4
    raw_norm : float, default 30.0
        ResNet-like raw norm of the features.
    spread : float, default 0.08
        Noise relative to ``raw_norm``.
    center_weight : float, default 0.1
    aperture : float, default 0.1
    init_radius : float, default 1.0
    steps : int, default 100
    lr : float, default 0.02
        Adam's step, relative to ``raw_norm`` for the centres (the log-scale's is 2.5 × ``lr``).
    seed : int, default 0

    Attributes
    ----------
    z : torch.Tensor, float64, shape (G, n, 2)
        The trained embeddings.
    node_z : torch.Tensor, float64, shape (G, N, 2)
        Every tree node's prototype (tangent mean of the points below it) per setting.
    labels : torch.LongTensor, shape (n,)
    v0 : torch.Tensor, float64, shape (n, 2)
        The raw features before training (the same for every setting).
    log_scale0, log_scale : torch.Tensor, shape (G,)
        Natural log of the head's scale before and after training.
    kinds : tuple of str
        The head choices trained, :data:`HEAD_KINDS`.
    settings : list of tuple
        ``(kind, clip_r, log10_scale, tau, cone)`` of every slice (log10_scale None for auto).
    train_s : float
        Seconds the training took.

    Raises
    ------
    ValueError
        An empty grid or a bad value.

    Examples
    --------
    >>> from hierviz.hierarchy import LabelTree
    >>> tree = LabelTree.from_nested({"r": {"a": ["a1", "a2"], "b": ["b1", "b2"]}})
    >>> grid = RadiusToyGrid(tree, clip_rs=[3.0], log_scales=[0.0], taus=[0.1], cones=[0.0], steps=20)
    >>> len(grid.settings), tuple(grid.z.shape)  # clip, tanh, tanh + auto
    (3, (3, 16, 2))
    >>> z, info = grid.get("clip", 3.0, 0.0, 0.1, 0.0)
    >>> info["log_scale"] == info["log_scale0"]  # every point clipped: the scale never moves
    True
    """

    def __init__(
        self,
        tree,
        clip_rs=(1.0, 2.0, 3.0),
        log_scales=(-2.0, -1.0, 0.0),
        taus=(0.1, 0.2, 0.3, 0.4),
        cones=(0.0, 1.0),
        *,
        n_per_leaf: int = 4,
        raw_norm: float = 30.0,
        spread: float = 0.08,
        center_weight: float = 0.1,
        aperture: float = 0.1,
        init_radius: float = 1.0,
        steps: int = 100,
        lr: float = 0.02,
        seed: int = 0,
    ) -> None:
        self.clip_rs = [float(v) for v in clip_rs]
        self.log_scales = [float(v) for v in log_scales]
        self.taus = [float(v) for v in taus]
        self.cones = [float(v) for v in cones]
        if not (self.clip_rs and self.log_scales and self.taus and self.cones):
            raise ValueError("clip_rs, log_scales, taus and cones must each hold at least one value")
        if min(self.clip_rs) <= 0 or min(self.taus) <= 0 or min(self.cones) < 0:
            raise ValueError("clip_rs and taus must be > 0 and cones >= 0")
        if not 0 < init_radius < 2 * min(self.clip_rs):
            raise ValueError(f"init_radius must lie in (0, 2 min(clip_rs)), got {init_radius!r}")
        self.tree = tree
        self.raw_norm, self.init_radius, self.steps = float(raw_norm), float(init_radius), int(steps)
        t0 = time.perf_counter()
        settings = []
        for kind, rho, tau, cone in itertools.product(HEAD_KINDS, self.clip_rs, self.taus, self.cones):
            for ls in [None] if kind == "tanh + auto scale" else self.log_scales:
                settings.append((kind, rho, ls, tau, cone))
        self.kinds = HEAD_KINDS
        self.settings = settings
        self._index = {s: i for i, s in enumerate(settings)}
        G = len(settings)

        # data: unit leaf directions (family wedges) on a circle of radius raw_norm, fixed noise
        v_toy, y = toy_tangent_points(tree, n_per_leaf=n_per_leaf, spread=0.0, seed=seed)
        C = tree.num_leaves
        dirs = np.zeros((C, 2))
        for leaf in range(C):
            d = v_toy[y == leaf][0]
            dirs[leaf] = d / np.linalg.norm(d)
        rng = np.random.default_rng(seed)
        noise = torch.from_numpy(spread * raw_norm * rng.standard_normal((len(y), 2)))
        self.labels = torch.from_numpy(y)
        yt = self.labels
        W = torch.from_numpy(raw_norm * dirs).unsqueeze(0).repeat(G, 1, 1).requires_grad_(True)  # (G, C, 2)

        kind_clip = torch.tensor([s[0] == "clip" for s in settings]).view(G, 1, 1)
        rho = torch.tensor([s[1] for s in settings], dtype=torch.float64).view(G, 1, 1)
        tau = torch.tensor([s[3] for s in settings], dtype=torch.float64).view(G, 1, 1)
        cone_w = torch.tensor([s[4] for s in settings], dtype=torch.float64)
        # initial log-scales: the slider's, or the head's auto rule (median raw norm -> init_radius)
        self.v0 = (W[0, yt] + noise).detach().clone()  # the raw features before training (every setting's)
        m = float(self.v0.norm(dim=-1).median())
        t = init_radius / 2.0  # d(0, exp_0 u) = 2 ||u|| on the ball
        s0 = [
            math.log(r * math.atanh(t / r) / m) if ls is None else ls * math.log(10.0) for (_, r, ls, _, _) in settings
        ]
        s = torch.tensor(s0, dtype=torch.float64, requires_grad=True)
        self.log_scale0 = s.detach().clone()

        # tree structure: membership (n, N), leaf node per sample, edges below depth 1 whose parent has more samples
        member = tree.ancestor_matrix.to(torch.float64)[yt]  # (n, N)
        counts = member.sum(0)
        A = member / counts.clamp_min(1)
        parent = tree.parent_index
        q = torch.arange(tree.num_nodes)
        keep = (tree.node_depth >= 2) & (counts[q] > 0)
        keep &= counts[parent.clamp_min(0)] > counts[q]
        ep, eq = parent[keep], q[keep]
        leaf_node = tree.leaf_node[yt]
        ball = _unit_ball()
        n = len(yt)
        eye = torch.eye(n, dtype=torch.bool)
        pos = (yt[:, None] == yt[None, :]) & ~eye
        n_pos = pos.sum(1).clamp_min(1)

        def forward(W, s):
            v = W[:, yt] + noise  # (G, n, 2)
            vs = v * s.view(G, 1, 1).exp()
            nv = vs.norm(dim=-1, keepdim=True).clamp_min(1e-15)
            # clip written so that a clipped point does not depend on s at all: its gradient is an exact zero
            clipped = torch.where(nv > rho, rho * v / v.norm(dim=-1, keepdim=True), vs)
            u = torch.where(kind_clip, clipped, vs * (rho * torch.tanh(nv / rho) / nv))
            return u, pmath.expmap0(u, 1.0)

        opt = torch.optim.Adam([{"params": [W], "lr": lr * raw_norm}, {"params": [s], "lr": 2.5 * lr}])
        for _ in range(self.steps):
            u, z = forward(W, s)
            D = pmath.dist(z.unsqueeze(2), z.unsqueeze(1), 1.0)  # (G, n, n)
            logits = (-D / tau).masked_fill(eye, -math.inf)
            logp = logits - torch.logsumexp(logits, dim=2, keepdim=True)
            supcon = -(logp.masked_fill(~pos, 0.0).sum(2) / n_pos).mean(1)  # (G,)
            P = torch.einsum("nk,gnd->gkd", A, u)  # tangent means of the nodes
            apex = pmath.expmap0(0.5 * P, 1.0)
            e = cone_energy(apex[:, leaf_node], z, ball, aperture).mean(1)
            if len(ep):
                e = e + cone_energy(apex[:, ep], apex[:, eq], ball, aperture).mean(1)
            centre = u.mean(1).norm(dim=-1)
            loss = (supcon + cone_w * e + center_weight * centre).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            u, z = forward(W, s)
            self.node_z = pmath.expmap0(torch.einsum("nk,gnd->gkd", A, u), 1.0)  # (G, N, 2) tangent-mean prototypes
        self.z = z.detach()
        self.log_scale = s.detach().clone()
        # which prototypes the metrics keep (chains contracted): fixed by the labels, the same for every setting
        self._kept = node_prototype_radii(self.z[0], yt, tree, _unit_ball(), steps=1)
        self._present = (counts > 0).numpy()
        self.train_s = time.perf_counter() - t0
        self._cache: dict[tuple, Any] = {}

    def key(self, kind: str, clip_r: float, log10_scale: float | None, tau: float, cone: float) -> tuple:
        """The grid setting nearest to the given values (``log10_scale`` is ignored for auto)."""
        if kind not in HEAD_KINDS:
            raise ValueError(f"kind must be one of {HEAD_KINDS}, got {kind!r}")

        def near(v, grid, name):
            if v is None:
                raise ValueError(f"{name} is required for kind {kind!r}")
            return min(grid, key=lambda g: abs(g - float(v)))

        ls = None if kind == "tanh + auto scale" else near(log10_scale, self.log_scales, "log10_scale")
        return (
            kind,
            near(clip_r, self.clip_rs, "clip_r"),
            ls,
            near(tau, self.taus, "tau"),
            near(cone, self.cones, "cone"),
        )

    def get(
        self, kind: str, clip_r: float, log10_scale: float | None, tau: float, cone: float
    ) -> tuple[np.ndarray, dict]:
        """The trained embedding of the nearest setting and its head's numbers.

        Returns
        -------
        z : numpy.ndarray, float64, shape (n, 2)
        info : dict
            ``setting``, ``log_scale0``, ``log_scale`` (natural logs), ``clip_r`` and ``node_z``
            (numpy float64, shape (N, 2): every node's tangent-mean prototype).
        """
        k = self.key(kind, clip_r, log10_scale, tau, cone)
        i = self._index[k]
        info = {
            "setting": k,
            "log_scale0": float(self.log_scale0[i]),
            "log_scale": float(self.log_scale[i]),
            "clip_r": k[1],
            "node_z": self.node_z[i].numpy(),
        }
        return self.z[i].numpy(), info

    def metrics(self, kind: str, clip_r: float, log10_scale: float | None, tau: float, cone: float) -> dict:
        """Radius by depth and the hierarchy-in-radius metrics of one setting, from the grid's prototypes.

        The node prototypes are the grid's tangent means (:attr:`node_z`, the stars of the disk), not
        Karcher means, so a slider move computes no Fréchet mean; the metrics are the library's
        (:func:`hierviz.metrics.radius_depth_spearman`, :func:`~hierviz.metrics.edge_order`,
        :func:`~hierviz.metrics.clip_fraction`, :func:`~hierviz.metrics.radius_gap`) on those radii, with
        single-child chains contracted as in :func:`hierviz.metrics.node_prototype_radii`.
        ``norm_auroc`` is left out (NaN): the toy has no classifier.

        Returns
        -------
        dict
            ``report`` (``radius_mean``, ``radius_std``, ``max_radius``, ``clip_fraction``,
            ``radius_by_depth`` as :func:`hierviz.metrics.radius_report`), ``metrics`` (the five keys),
            ``setting``, ``log_scale0``, ``log_scale``, ``clip_r``, ``node_z``.
        """
        k = self.key(kind, clip_r, log10_scale, tau, cone)
        if k in self._cache:
            return self._cache[k]
        z, info = self.get(*k)
        i = self._index[k]
        ball = _unit_ball()
        r = 2 * np.arctanh(np.minimum(np.linalg.norm(z, axis=1), 1 - 1e-15))  # d(0, z) on the ball, c = 1
        node_r = 2 * np.arctanh(np.minimum(self.node_z[i].norm(dim=-1).numpy(), 1 - 1e-15))
        kept = self._kept
        radius = node_r[kept["node"]]
        top = max_radius(ball, k[1], dtype=torch.float64)
        leaf_depth = self.tree.leaf_depth.numpy()[self.labels.numpy()]
        node_depth = self.tree.node_depth.numpy()
        rows = []
        for depth in range(self.tree.height + 1):
            at = r[leaf_depth == depth]
            pr = node_r[(node_depth == depth) & self._present]
            rows.append(
                {
                    "depth": depth,
                    "n_samples": int(at.size),
                    "sample_mean": float(at.mean()) if at.size else None,
                    "sample_std": float(at.std()) if at.size else None,
                    "n_protos": int(pr.size),
                    "proto_mean": float(pr.mean()) if pr.size else None,
                    "proto_std": float(pr.std()) if pr.size else None,
                }
            )
        cf = clip_fraction(r, top)
        rep = {
            "radius_mean": float(r.mean()),
            "radius_std": float(r.std()),
            "max_radius": top,
            "clip_fraction": cf,
            "radius_by_depth": rows,
        }
        met = {
            "radius_depth_spearman": radius_depth_spearman(radius, kept["depth"]),
            "edge_order": edge_order(radius, kept["parent"]),
            "clip_fraction": cf,
            "radius_gap": radius_gap(radius, kept["depth"], kept["is_leaf"]),
            "norm_auroc": float("nan"),
        }
        self._cache[k] = {"report": rep, "metrics": met, **info}
        return self._cache[k]


def _unit_ball():
    return PoincareBall(1.0)
