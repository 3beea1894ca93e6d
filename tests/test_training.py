"""The training loop (hierviz.train): schedule, learning, exact resume, NaN stop."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.utils.data import Dataset

from hierviz.geometry import get_geometry
from hierviz.hierarchy import LabelTree
from hierviz.methods import build_objective
from hierviz.models import build_model
from hierviz.training import (
    CHECKPOINT_NAME,
    NonFiniteLossError,
    TrainConfig,
    fit,
    load_checkpoint,
    resolve_device,
    seed_everything,
    warmup_cosine,
)

TREE = LabelTree.from_nested({"root": {"p": ["a", "b"], "q": ["c", "d"]}})


class TinyViews(Dataset):
    """24 images of 4 classes (class = mean colour) with two noisy views drawn from torch's RNG."""

    def __init__(self, n: int = 24, size: int = 12):
        g = torch.Generator().manual_seed(123)
        self.labels = torch.arange(n) % 4
        colours = torch.tensor([[1.0, 0, 0], [0.8, 0.2, 0], [0, 0, 1.0], [0, 0.2, 0.8]])
        self.x = colours[self.labels][:, :, None, None] + 0.3 * torch.randn(n, 3, size, size, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.x[i]
        views = torch.stack([x + 0.2 * torch.randn_like(x), torch.flip(x, dims=[-1]) + 0.2 * torch.randn_like(x)])
        return views, int(self.labels[i])


def _model(geometry="euclidean", num_classes=None):
    seed_everything(0)
    return build_model("small_cnn", get_geometry(geometry), embed_dim=8, width=4, num_classes=num_classes)


def _config(tmp_path=None, **kw):
    base = dict(
        epochs=3,
        batch_size=8,
        warmup_epochs=1,
        lr_backbone=1e-3,
        lr_head=1e-2,
        progress=False,
        checkpoint_dir=tmp_path,
        seed=0,
    )
    base.update(kw)
    return TrainConfig(**base)


# ----------------------------------------------------------------------------- schedule


def test_warmup_cosine_hand_values():
    W, T = 2, 6
    got = [warmup_cosine(s, W, T) for s in range(7)]
    want = [0.5, 1.0, 1.0, 0.5 * (1 + math.cos(math.pi / 4)), 0.5, 0.5 * (1 + math.cos(3 * math.pi / 4)), 0.0]
    assert got == pytest.approx(want)
    assert warmup_cosine(0, 0, 4) == 1.0  # no warmup starts at the peak


def test_param_groups_follow_lr_ratio_and_schedule(tmp_path):
    model = _model()
    obj = build_objective("supcon", TREE, get_geometry("euclidean"))
    seen = []

    def record(epoch, info):
        seen.append(epoch)

    res = fit(_config(tmp_path, epochs=2, warmup_epochs=1), model, obj, TinyViews(), callbacks=[record])
    assert seen == [0, 1]
    state = load_checkpoint(tmp_path)
    groups = state["optimizer"]["param_groups"]
    assert [g["name"] for g in groups] == ["backbone", "head"]
    assert groups[1]["initial_lr"] == pytest.approx(10 * groups[0]["initial_lr"])  # paper 01 §4.2: 10x
    assert groups[0]["weight_decay"] == pytest.approx(1e-4)
    # 3 steps/epoch, warmup 3 steps: after epoch 1 the LR is at its peak (warmup ends), then cosine to 0
    assert res.history["lr_head"][0] == pytest.approx(1e-2 * warmup_cosine(3, 3, 6))
    assert res.history["lr_head"][1] == pytest.approx(0.0, abs=1e-12)


# ----------------------------------------------------------------------------- learning


def test_loss_decreases_on_tiny_data():
    model = _model()
    obj = build_objective("supcon", TREE, get_geometry("euclidean"))
    res = fit(_config(epochs=6, warmup_epochs=0), model, obj, TinyViews())
    first, last = res.history["loss"][0], res.history["loss"][-1]
    assert last < first - 0.05, res.history["loss"]
    assert set(res.history) == {"loss", "supcon", "lr_head"}
    assert len(res.step_history["loss"]) == 6 * 3
    assert not model.training  # returned in eval mode
    assert res.ema is not None and res.resumed_from == 0 and res.checkpoint is None


def test_ema_tracks_weights_with_decay(tmp_path):
    model = _model()
    obj = build_objective("supcon", TREE, get_geometry("euclidean"))
    res = fit(_config(epochs=1, ema_decay=0.5), model, obj, TinyViews())
    w = dict(model.named_parameters())["head.net.3.bias"]
    e = dict(res.ema.module.named_parameters())["head.net.3.bias"]
    assert not torch.equal(w, e)  # an average, not a copy
    assert int(res.ema.n_averaged) == 3


def test_hxe_trains_classifier_on_every_view():
    model = _model(num_classes=4)
    obj = build_objective("hxe", TREE, get_geometry("euclidean"))
    res = fit(_config(epochs=4, warmup_epochs=0), model, obj, TinyViews())
    assert res.history["loss"][-1] < res.history["loss"][0]
    with pytest.raises(ValueError, match="num_classes"):
        fit(_config(epochs=1), _model(), obj, TinyViews())


def test_view_mean_of_logit_loss_equals_flattened_loss():
    from hierviz.training.loop import _loss_with_logits

    obj = build_objective("hxe", TREE, get_geometry("euclidean"))
    logits = torch.randn(5, 2, 4, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 3, 1])
    loss, terms = _loss_with_logits(obj, None, y, logits)
    flat, _ = obj(None, y.repeat_interleave(2), logits=logits.reshape(10, 4))
    torch.testing.assert_close(loss, flat)
    assert set(terms) == {"hxe"}
    # bfloat16 logits (autocast) are scored in float32
    loss16, _ = _loss_with_logits(obj, None, y, logits.bfloat16())
    assert loss16.dtype == torch.float32


# ----------------------------------------------------------------------------- resume


def _state(res, obj):
    sd = {f"model.{k}": v for k, v in res.model.state_dict().items()}
    sd.update({f"ema.{k}": v for k, v in res.ema.state_dict().items()})
    sd.update({f"obj.{k}": v for k, v in obj.state_dict().items()})
    return sd


def test_resume_after_interruption_is_bit_identical(tmp_path):
    geo = "poincare"
    # uninterrupted
    obj_a = build_objective("hwc+lam", TREE, get_geometry(geo))
    ref = fit(_config(tmp_path / "a"), _model(geo), obj_a, TinyViews())

    # interrupted after epoch 1, then resumed in a fresh process-like setting
    def crash(epoch, info):
        if epoch == 0:
            raise KeyboardInterrupt

    obj_b = build_objective("hwc+lam", TREE, get_geometry(geo))
    with pytest.raises(KeyboardInterrupt):
        fit(_config(tmp_path / "b"), _model(geo), obj_b, TinyViews(), callbacks=[crash])
    assert load_checkpoint(tmp_path / "b")["epoch"] == 1
    torch.manual_seed(999)  # disturb global RNG: resume must restore it
    obj_c = build_objective("hwc+lam", TREE, get_geometry(geo))
    res = fit(_config(tmp_path / "b", resume=True), _model(geo), obj_c, TinyViews())
    assert res.resumed_from == 1
    a, b = _state(ref, obj_a), _state(res, obj_c)
    assert a.keys() == b.keys()
    assert any("prototypes" in k for k in a)  # LAM buffers are part of the state
    for k in a:
        assert torch.equal(a[k], b[k]), k
    assert res.history == ref.history
    assert res.step_history == ref.step_history

    # resuming a finished run trains nothing and returns the same weights
    again = fit(
        _config(tmp_path / "b", resume=True),
        _model(geo),
        build_objective("hwc+lam", TREE, get_geometry(geo)),
        TinyViews(),
    )
    assert again.resumed_from == 3
    for k, v in again.model.state_dict().items():
        assert torch.equal(v, ref.model.state_dict()[k])


def test_resume_with_other_settings_is_refused(tmp_path):
    obj = build_objective("supcon", TREE, get_geometry("euclidean"))
    fit(_config(tmp_path, epochs=1), _model(), obj, TinyViews())
    with pytest.raises(ValueError, match="epochs"):
        fit(_config(tmp_path, epochs=2, resume=True), _model(), obj, TinyViews())


def test_checkpoint_is_complete_and_written_atomically(tmp_path):
    obj = build_objective("hwc+lam", TREE, get_geometry("euclidean"))
    fit(_config(tmp_path, epochs=1), _model(), obj, TinyViews())
    assert sorted(p.name for p in tmp_path.iterdir()) == [CHECKPOINT_NAME]  # no temp files left
    state = load_checkpoint(tmp_path / CHECKPOINT_NAME)
    assert {
        "epoch",
        "config",
        "model",
        "optimizer",
        "scheduler",
        "scaler",
        "ema",
        "objective",
        "rng",
        "history",
        "step_history",
        "train_seconds",
        "global_step",
    } <= set(state)
    assert state["epoch"] == 1 and state["global_step"] == 3
    assert any(k.endswith("prototypes") for k in state["objective"])
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_checkpoint(tmp_path / "missing")


# ----------------------------------------------------------------------------- NaN stop


class PoisonAfter(nn.Module):
    """SupCon whose extra term turns NaN at global call ``k`` (0-based)."""

    requires_logits = False

    def __init__(self, k):
        super().__init__()
        self.base = build_objective("supcon", TREE, get_geometry("euclidean"))
        self.k, self.calls = k, 0

    def forward(self, z, labels, logits=None):
        loss, terms = self.base(z, labels)
        bad = torch.tensor(float("nan") if self.calls == self.k else 0.25)
        self.calls += 1
        return loss + bad, {**terms, "poison": bad}


def test_nan_loss_stops_naming_step_and_terms_and_keeps_checkpoint(tmp_path):
    model = _model()
    with pytest.raises(NonFiniteLossError) as ei:
        fit(_config(tmp_path), model, PoisonAfter(k=4), TinyViews())  # 3 steps/epoch -> epoch 1, step 1
    err = ei.value
    msg = str(err)
    assert isinstance(err, RuntimeError)
    assert (err.epoch, err.step, err.global_step) == (1, 1, 4)
    assert "epoch 1, step 1" in msg and "global step 4" in msg
    assert "supcon=" in msg and "poison=nan" in msg and "loss=nan" in msg
    assert str(tmp_path / CHECKPOINT_NAME) in msg
    state = load_checkpoint(tmp_path)
    assert state["epoch"] == 1  # the last good checkpoint, untouched
    assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())


def test_nan_at_first_step_says_no_checkpoint():
    with pytest.raises(NonFiniteLossError, match="no checkpoint had been written"):
        fit(_config(), _model(), PoisonAfter(k=0), TinyViews())


# ----------------------------------------------------------------------------- config / device


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"epochs": 0}, "epochs"),
        ({"batch_size": 0}, "batch_size"),
        ({"lr_head": 0.0}, "lr_head"),
        ({"lr_backbone": float("nan")}, "lr_backbone"),
        ({"ema_decay": 1.0}, "ema_decay"),
        ({"warmup_epochs": -1}, "warmup_epochs"),
        ({"grad_clip": 0.0}, "grad_clip"),
        ({"seed": -1}, "seed"),
    ],
)
def test_train_config_rejects_bad_values(kw, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kw)


def test_fit_rejects_bad_config_type_and_empty_data():
    obj = build_objective("supcon", TREE, get_geometry("euclidean"))
    with pytest.raises(TypeError, match="TrainConfig"):
        fit({"epochs": 1}, _model(), obj, TinyViews())
    with pytest.raises(ValueError, match="empty"):
        fit(_config(epochs=1), _model(), obj, TinyViews(n=0))


def test_small_dataset_gives_one_full_batch():
    obj = build_objective("supcon", TREE, get_geometry("euclidean"))
    res = fit(_config(epochs=2, batch_size=64), _model(), obj, TinyViews(n=12))
    assert len(res.step_history["loss"]) == 2  # one batch of 12 per epoch, nothing dropped


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="device"):
        resolve_device("banana")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda")


def test_seed_everything_is_reproducible():
    seed_everything(7)
    a = (torch.rand(3), __import__("numpy").random.rand(2))
    seed_everything(7)
    b = (torch.rand(3), __import__("numpy").random.rand(2))
    assert torch.equal(a[0], b[0]) and (a[1] == b[1]).all()
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-3)
