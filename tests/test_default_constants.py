"""τ's and c's defaults are written once each: every signature refers to the constant.

``hierviz.losses.DEFAULT_TAU`` (0.1), ``hierviz.losses.DEFAULT_TAU_HYPERBOLIC`` (1.0, ``loss.tau_hyperbolic``)
and ``hierviz.geometry.DEFAULT_CURVATURE`` (1.0). A second literal default drifts when the first changes;
the AST scan below finds any signature or config field that writes the number again.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
import torch

from hierviz import losses
from hierviz.geometry import DEFAULT_CURVATURE, Lorentz, PoincareBall
from hierviz.geometry.tree_embedding import sarkar_embedding
from hierviz.hierarchy.synthetic import b_ary_tree
from hierviz.losses import DEFAULT_TAU, DEFAULT_TAU_HYPERBOLIC
from hierviz.methods import LOSS_HPARAMS
from hierviz.retrieval.index import augment_references, mips_references, poincare_scores

ROOT = Path(__file__).resolve().parents[1]

#: Parameter / field names that hold τ or the curvature magnitude, and the literal each must not repeat.
_LITERALS = {"tau": 0.1, "temperature": 0.1, "tau_hyperbolic": 1.0, "c": 1.0, "k": 1.0, "curvature": 1.0}


def test_constant_values():
    assert (DEFAULT_TAU, DEFAULT_TAU_HYPERBOLIC, DEFAULT_CURVATURE) == (0.1, 1.0, 1.0)
    assert all(isinstance(v, float) for v in (DEFAULT_TAU, DEFAULT_TAU_HYPERBOLIC, DEFAULT_CURVATURE))


#: Each contrastive loss, built with every argument but τ: (class, args).
_BUILD = {
    "SupConLoss": lambda t: losses.SupConLoss(t, "euclidean"),
    "SimCLRLoss": lambda t: losses.SimCLRLoss(t, "euclidean"),
    "HWCLoss": lambda t: losses.HWCLoss(t, "euclidean"),
    "OutsideSoftmaxHCLoss": lambda t: losses.OutsideSoftmaxHCLoss(t, "euclidean"),
    "HMLCLoss": lambda t: losses.HMLCLoss(tree=t),
    "GHMLCLoss": lambda t: losses.GHMLCLoss(t),
    "AHMLCLoss": lambda t: losses.AHMLCLoss(t),
}


@pytest.mark.parametrize("name", sorted(_BUILD))
def test_every_contrastive_loss_defaults_to_default_tau(name, breakhis_tree):
    assert inspect.signature(getattr(losses, name)).parameters["tau"].default is DEFAULT_TAU
    loss = _BUILD[name](breakhis_tree)
    inner = getattr(loss, "hmlc", loss)  # G-HMLC and A-HMLC keep τ on their HMLC loss
    assert inner.tau == 0.1


def test_config_keys_default_to_the_constants():
    assert LOSS_HPARAMS["tau"].default is DEFAULT_TAU
    assert LOSS_HPARAMS["tau_hyperbolic"].default is DEFAULT_TAU_HYPERBOLIC


def test_geometries_and_maps_default_to_default_curvature():
    assert PoincareBall().c == Lorentz().c == DEFAULT_CURVATURE
    for fn in (augment_references, mips_references, poincare_scores, sarkar_embedding):
        assert inspect.signature(fn).parameters["c"].default is DEFAULT_CURVATURE
    x = torch.tensor([[0.3, 0.1], [-0.2, 0.4]], dtype=torch.float64)
    torch.testing.assert_close(augment_references(x), augment_references(x, c=1.0), rtol=0, atol=0)
    tree = b_ary_tree(2, 2)
    torch.testing.assert_close(sarkar_embedding(tree), sarkar_embedding(tree, c=1.0), rtol=0, atol=0)


def _literal_defaults(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line name=value`` for every argument default or annotated field that repeats a default literal."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hits = []

    def check(name: str, value: ast.expr | None, line: int) -> None:
        if (
            name in _LITERALS
            and isinstance(value, ast.Constant)
            and type(value.value) is float
            and value.value == _LITERALS[name]
        ):
            hits.append(f"{path.relative_to(root)}:{line} {name}={value.value!r}")

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            positional = [*a.posonlyargs, *a.args]
            for arg, default in zip(positional[len(positional) - len(a.defaults) :], a.defaults):
                check(arg.arg, default, default.lineno)
            for arg, default in zip(a.kwonlyargs, a.kw_defaults):
                if default is not None:
                    check(arg.arg, default, default.lineno)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            check(node.target.id, node.value, node.lineno)
    return hits


def test_no_signature_repeats_a_default_literal():
    hits = [h for p in sorted((ROOT / "hierviz").rglob("*.py")) for h in _literal_defaults(p)]
    assert not hits, "write DEFAULT_TAU / DEFAULT_TAU_HYPERBOLIC / DEFAULT_CURVATURE, not the number:\n" + "\n".join(
        hits
    )


def test_the_scan_finds_a_literal_default(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "def f(x, c: float = 1.0, *, tau=0.1):\n    pass\n"
        "def g(c=2.0, tau=DEFAULT_TAU, edge: float = 1.0):\n    pass\n"
        "class C:\n    curvature: float = 1.0\n",
        encoding="utf-8",
    )
    assert _literal_defaults(f, tmp_path) == ["m.py:1 c=1.0", "m.py:1 tau=0.1", "m.py:6 curvature=1.0"]
