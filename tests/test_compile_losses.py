"""Every registered objective compiles with ``fullgraph=True`` and equals eager mode.

Each case: one eager call (what :class:`hierviz.losses.CompiledLoss` does first: checks and
lazy state), then the same objective (a deep copy) once eagerly and once through
``torch.compile(fullgraph=True, dynamic=False)``; loss, the gradients of ``z`` and of every
parameter, and every buffer afterwards (LAM prototypes, leaf counts) must agree to float32
rounding. ``fullgraph=True`` fails on any graph break (a host read, a data-dependent shape, a
Python branch on a tensor). The parametrised test uses the ``aot_eager`` backend: dynamo and
AOTAutograd trace forward and backward exactly as for inductor, without its C++ code
generation (tens of seconds per objective on a CPU); two cases run through inductor itself.
"""

from __future__ import annotations

import pytest
import torch

from hierviz.geometry import get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.losses import CompiledLoss
from hierviz.losses.compiled import objective_loss
from hierviz.methods import METHODS, build_objective

TREE = LabelTree.from_nested({"root": {"a": ["x", "y"], "b": {"c": ["z", "w"], "d": ["v"]}}})
GEOMETRIES = ("euclidean", "poincare", "lorentz")
B, D = 6, 5
#: Fewer unrolled iterations than the defaults (same code paths, a shorter trace).
#: each method's own objective (the default depth terms are compiled by their own test below)
HPARAMS = {"g_hmlc.gmm_max_iter": 5, "lam.mean_steps": 1, "cone_weight": 0.0, "center_weight": 0.0, "cpcc_weight": 0.0}


def _inputs(geometry, views: int, logits: bool):
    g = torch.Generator().manual_seed(0)
    v = 0.4 * torch.randn(B, views, D, generator=g)
    z = geometry.expmap0(v) if geometry.hyperbolic else torch.nn.functional.normalize(v, dim=-1)
    y = torch.tensor([0, 1, 2, 3, 4, 0])
    lg = torch.randn(B, views, TREE.num_leaves, generator=g) if logits else None
    return z, y, lg


def _call(fn, z, y, lg, params):
    zz = z.clone().requires_grad_()
    leaves = [zz, *params]
    if lg is not None:
        lg = lg.clone().requires_grad_()
        leaves.append(lg)
    out = {"z": zz, "features": zz} if lg is None else {"z": zz, "features": zz, "logits": lg}  # HyILR: features
    loss, terms = fn(out, y)
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return loss.detach(), {k: torch.as_tensor(v).detach() for k, v in terms.items()}, grads


def _build(name: str, geo: str):
    geometry = get_geometry(geo)
    method = METHODS.get(name)
    obj = build_objective(name, TREE, geometry, **HPARAMS)
    z, y, lg = _inputs(geometry, method.needs.views, method.needs.logits)
    try:
        objective_loss(obj, {"z": z, "features": z} if lg is None else {"z": z, "features": z, "logits": lg}, y)
    except (ValueError, TypeError, NotImplementedError) as err:
        pytest.skip(f"{name} does not run in {geo} geometry: {err}")
    return obj, z, y, lg


def _check(name: str, geo: str, backend: str) -> None:
    torch._dynamo.reset()
    torch.manual_seed(0)  # lazy heads initialise from the global generator: two identical objectives
    obj, z, y, lg = _build(name, geo)
    torch.manual_seed(0)
    obj_c = _build(name, geo)[0]
    params_e = [p for p in obj.parameters() if p.requires_grad]
    params_c = [p for p in obj_c.parameters() if p.requires_grad]
    torch.manual_seed(1)  # the same draws in both calls (hyilr-no-hns's random negatives)
    loss_e, terms_e, grads_e = _call(lambda o, t: objective_loss(obj, o, t), z, y, lg, params_e)
    fn = CompiledLoss(obj_c, backend=backend, fallback=False)
    fn.calls = 1  # the eager first call happened in _build
    torch.manual_seed(1)
    loss_c, terms_c, grads_c = _call(fn, z, y, lg, params_c)
    tol = {"rtol": 1e-4, "atol": 1e-5}
    torch.testing.assert_close(loss_c, loss_e, **tol)
    assert terms_c.keys() == terms_e.keys()
    for k in terms_e:
        torch.testing.assert_close(terms_c[k], terms_e[k], **tol)
    for ge, gc in zip(grads_e, grads_c, strict=True):
        assert (ge is None) == (gc is None)
        if ge is not None:
            torch.testing.assert_close(gc, ge, **tol)
    for (k, be), (_, bc) in zip(obj.named_buffers(), obj_c.named_buffers(), strict=True):
        torch.testing.assert_close(bc, be, **tol, msg=f"buffer {k}")


#: G-HMLC unrolls its GMM fit (``gmm_max_iter`` EM iterations) into the graph; a hyperbolic
#: LAM its Karcher steps with every line-search trial.
_SLOW = {"g-hmlc", ("lam", "lorentz"), ("hwc+lam", "lorentz")}


def _cases():
    for name in METHODS.names():
        # HyILR's contrastive space is the method's own (paper 05 Table 4), not the run geometry: one is enough
        for geo in GEOMETRIES[:1] if name.startswith("hyilr") else GEOMETRIES:
            marks = []
            if name in _SLOW or (name, geo) in _SLOW:
                marks.append(pytest.mark.slow)
            yield pytest.param(name, geo, marks=marks, id=f"{name}-{geo}")


@pytest.mark.parametrize(("name", "geo"), list(_cases()))
def test_every_objective_compiles_fullgraph_and_equals_eager(name, geo):
    _check(name, geo, "aot_eager")


@pytest.mark.slow
@pytest.mark.parametrize(("name", "geo"), [("supcon", "euclidean"), ("hwc", "poincare")])
def test_objective_compiled_by_inductor_equals_eager(name, geo):
    _check(name, geo, "inductor")


def test_compiled_loss_falls_back_to_eager_with_a_warning_on_a_graph_break():
    class Breaks(torch.nn.Module):
        def forward(self, z, labels):
            if float(z.sum()) > -1e30:  # a host read: a graph break under fullgraph=True
                return z.pow(2).mean()
            return z.mean()

    fn = CompiledLoss(Breaks(), backend="eager")
    z = torch.randn(4, 2, 3)
    first, _ = fn({"z": z}, None)
    with pytest.warns(RuntimeWarning, match="compile_loss"):
        second, _ = fn({"z": z}, None)
    assert not fn.compiled and torch.equal(first, second)
    strict = CompiledLoss(Breaks(), backend="eager", fallback=False)
    strict({"z": z}, None)
    with pytest.raises(Exception, match="(?i)graph break|unsupported|item"):
        strict({"z": z}, None)


@pytest.mark.parametrize("geometry", ["lorentz", "poincare", "euclidean"])
def test_hyilr_loss_compiles_fullgraph_and_equals_eager(geometry):
    """HyILR (paper 05, hierarchy negatives) in each of its spaces: forward + backward, one graph."""
    from hierviz.losses.hyilr import HyperbolicScales, hyilr_loss, label_relations

    torch._dynamo.reset()
    torch.manual_seed(0)
    scales = HyperbolicScales(8, geometry=geometry)
    rel = label_relations(TREE)
    c = TREE.num_nodes if rel[0].shape[0] == TREE.num_nodes else rel[0].shape[0]
    g = torch.Generator().manual_seed(1)
    logits, text, lab = torch.randn(4, c, generator=g), torch.randn(4, 8, generator=g), torch.randn(c, 8, generator=g)
    targets = torch.rand(4, c, generator=g) < 0.4

    def run(fn):
        t = text.clone().requires_grad_()
        loss, _ = fn(logits, t, lab, targets)
        return loss.detach(), torch.autograd.grad(loss, [t, *scales.parameters()], allow_unused=True)

    def step(lg, t, lb, tg):
        return hyilr_loss(lg, t, lb, tg, scales, rel, lam=0.5)

    le, ge = run(step)
    lc, gc = run(torch.compile(step, fullgraph=True, dynamic=False, backend="aot_eager"))
    torch.testing.assert_close(lc, le, rtol=1e-4, atol=1e-5)
    for a, b in zip(gc, ge, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_training_with_compile_loss_equals_eager_training(monkeypatch):
    """``TrainConfig(compile_loss=True)``: the same losses step by step (aot_eager: the same graphs, no codegen)."""
    from torch.utils.data import Dataset

    from hierviz.losses import compiled
    from hierviz.models import build_model
    from hierviz.training import TrainConfig, fit, seed_everything

    class Views(Dataset):
        def __init__(self):
            g = torch.Generator().manual_seed(1)
            self.x = torch.randn(12, 2, 3, 8, 8, generator=g)
            self.y = torch.arange(12) % 5

        def __len__(self):
            return 12

        def __getitem__(self, i):
            return self.x[i], int(self.y[i])

    monkeypatch.setattr(compiled, "DEFAULT_BACKEND", "aot_eager")
    histories = []
    for flag in (False, True):
        torch._dynamo.reset()
        seed_everything(0)
        model = build_model("small_cnn", get_geometry("euclidean"), embed_dim=6, width=4)
        obj = build_objective("hwc+lam", TREE, get_geometry("euclidean"))
        cfg = TrainConfig(epochs=1, batch_size=6, warmup_epochs=0, progress=False, amp=False, compile_loss=flag)
        torch._dynamo.utils.counters.clear()
        histories.append(fit(cfg, model, obj, Views()).step_history["loss"])
        assert (torch._dynamo.utils.counters["stats"]["unique_graphs"] > 0) == flag  # compiled only when asked
    assert len(histories[0]) == 2
    assert histories[1] == pytest.approx(histories[0], rel=1e-5, abs=1e-6)


def test_compile_loss_key_is_on_in_the_gpu_preset_and_leaves_fingerprints_alone():
    from hierviz.experiments.config import ExperimentConfig, resolve_config
    from hierviz.experiments.records import fingerprint

    assert resolve_config("gpu", {}).train.compile_loss is True
    assert resolve_config("quick-ham10000", {}).train.compile_loss is False
    d = ExperimentConfig().to_dict()
    old = {k: dict(v) if isinstance(v, dict) else v for k, v in d.items()}
    del old["train"]["compile_loss"]  # a run recorded before the key still resumes and merges
    on = ExperimentConfig().to_dict()
    on["train"]["compile_loss"] = True  # rounding only: not part of a run's identity
    assert fingerprint(d) == fingerprint(old) == fingerprint(on)


@pytest.mark.parametrize("name", ["supcon", "hwc+lam"])
def test_poincare_objective_compiles_fullgraph_on_the_cuda_kernel_path(name, monkeypatch):
    """The path a CUDA run takes, on a CPU.

    On CUDA, Poincaré distances go through the fused autograd Function
    (:func:`hierviz.geometry._kernels.poincare_pairwise_dist`), and after the first eager step the
    compiled kernel pair exists. The CPU cases above keep the reference path
    (``FUSED_ON_CPU = False``), so this state was never compiled on a CPU: on an H100 with torch
    2.11 dynamo broke the graph in the kernel dispatch (a ``tuple is not tuple``), and every
    Poincaré objective of ``train.compile_loss`` ran eagerly. Here the fused Function and a
    kernel pair are in place, and the objective must compile in one graph and equal eager mode.
    """
    from hierviz.geometry import _kernels

    monkeypatch.setattr(_kernels, "FUSED_ON_CPU", True)
    monkeypatch.setattr(_kernels, "_CUDA_KERNELS", (_kernels._fwd_inplace, _kernels._bwd_inplace))
    _check(name, "poincare", "aot_eager")


#: each depth term once (a term's Karcher means unroll into the graph: about 3 s of tracing per step and term;
#: the test runs one step, which takes the same padded fixed-shape path as the default three)
_DEPTH_TERMS = {
    "poincare": ("order_weight", "cpcc_weight"),
    "lorentz": ("cone_weight", "center_weight", "depth_weight"),
}


@pytest.mark.parametrize("geo", list(_DEPTH_TERMS))
def test_depth_regularisers_compile_fullgraph_and_equal_eager(geo):
    """The depth terms inside a compiled objective: under torch.compile the batch node prototypes
    come from the padded leaf paths and absent edges are masked (fixed shapes, no host read); the
    eager path keeps ``nonzero`` and the early exits. The two agree to float32 rounding."""
    torch._dynamo.reset()
    geometry = get_geometry(geo)
    weights = {
        **dict.fromkeys(("cone_weight", "center_weight", "cpcc_weight"), 0.0),
        **dict.fromkeys(_DEPTH_TERMS[geo], 0.5),
    }
    obj = build_objective("supcon", TREE, geometry, **weights)
    assert sorted(obj.terms) == sorted(["supcon", *(k.removesuffix("_weight") for k in _DEPTH_TERMS[geo])])
    for term in obj.terms.values():
        if hasattr(term, "steps"):
            term.steps = 1
    g = torch.Generator().manual_seed(0)
    z = geometry.expmap0(0.4 * torch.randn(B, 2, D, generator=g))
    for y in (torch.tensor([0, 1, 2, 3, 4, 0]), torch.tensor([0, 0, 1, 1, 0, 1])):  # all leaves; x and y only
        loss_e, terms_e, (grad_e,) = _call(lambda o, t: objective_loss(obj, o, t), z, y, None, [])
        fn = CompiledLoss(obj, backend="aot_eager", fallback=False)
        fn.calls = 1  # straight to the compiled path
        loss_c, terms_c, (grad_c,) = _call(fn, z, y, None, [])
        torch.testing.assert_close(loss_c, loss_e, rtol=1e-4, atol=1e-5)
        for k in terms_e:
            torch.testing.assert_close(terms_c[k], terms_e[k], rtol=1e-4, atol=1e-5, msg=k)
        torch.testing.assert_close(grad_c, grad_e, rtol=1e-4, atol=1e-5)
