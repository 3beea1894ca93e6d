"""Batched device augmentation (hierviz.data.gpu_augment) against torchvision's per-image ops, on CPU tensors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as TF

from hierviz.data import TwoViewTransform
from hierviz.data.gpu_augment import (
    BatchTwoViewAugment,
    UInt8Images,
    adjust_brightness_batch,
    adjust_contrast_batch,
    adjust_hue_batch,
    adjust_saturation_batch,
    batch_seed,
    crop_boxes,
    gaussian_blur_batch,
    grayscale_batch,
    resized_crop_batch,
)


def _images(n=6, size=24, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    # smooth-ish colour images: low-res noise upsampled, so resampling differences stay small
    low = torch.rand(n, 3, size // 4, size // 4, generator=g)
    return torch.nn.functional.interpolate(low, size=(size, size), mode="bilinear", align_corners=False)


@pytest.mark.parametrize(
    "batched,per_image,factors",
    [
        (adjust_brightness_batch, TF.adjust_brightness, [0.6, 1.0, 1.4, 0.9, 1.2, 0.0]),
        (adjust_contrast_batch, TF.adjust_contrast, [0.6, 1.0, 1.4, 0.9, 1.2, 0.0]),
        (adjust_saturation_batch, TF.adjust_saturation, [0.6, 1.0, 1.4, 0.9, 1.2, 0.0]),
        (adjust_hue_batch, TF.adjust_hue, [-0.1, 0.0, 0.1, 0.05, -0.5, 0.5]),
    ],
)
def test_colour_ops_equal_torchvision_per_image(batched, per_image, factors):
    x = _images()
    got = batched(x.clone(), torch.tensor(factors))
    want = torch.stack([per_image(x[i], f) for i, f in enumerate(factors)])
    torch.testing.assert_close(got, want, rtol=0, atol=2e-6)


def test_grayscale_and_blur_equal_torchvision_per_image():
    x = _images()
    torch.testing.assert_close(grayscale_batch(x), TF.rgb_to_grayscale(x, num_output_channels=1), rtol=0, atol=1e-6)
    sig = torch.tensor([0.1, 0.5, 1.0, 1.5, 2.0, 0.7])
    got = gaussian_blur_batch(x, 5, sig)
    want = torch.stack([TF.gaussian_blur(x[i], [5, 5], [float(s), float(s)]) for i, s in enumerate(sig)])
    torch.testing.assert_close(got, want, rtol=0, atol=2e-6)


def test_crop_boxes_follow_the_random_resized_crop_rule():
    g = torch.Generator().manual_seed(0)
    n, H, W = 4000, 64, 48
    b = crop_boxes(n, H, W, (0.5, 1.0), (3 / 4, 4 / 3), g)
    w, h = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    assert torch.all(b[:, :2] >= 0) and torch.all(b[:, 2] <= W) and torch.all(b[:, 3] <= H)
    assert torch.all(w == w.round()) and torch.all(h == h.round()) and torch.all(b[:, :2] == b[:, :2].round())
    frac = w * h / (H * W)
    fitted = frac < 0.999  # the rest are the whole-image fallback (or a try that fits exactly)
    assert float(frac[fitted].min()) > 0.5 - 0.05 and float(frac.max()) <= 1.0
    aspect = (w / h)[fitted]
    assert float(aspect.min()) > 0.75 * 0.9 and float(aspect.max()) < 4 / 3 * 1.1
    # same distribution as torchvision's get_params (area fraction and offsets), checked on their means
    torch.manual_seed(0)
    tv = v2.RandomResizedCrop(16, scale=(0.5, 1.0))
    img = torch.zeros(3, H, W)
    params = [tv.make_params([img]) for _ in range(4000)]
    tv_frac = np.mean([p["height"] * p["width"] / (H * W) for p in params])
    tv_top = np.mean([p["top"] for p in params])
    assert abs(float(frac.double().mean()) - tv_frac) < 0.01
    assert abs(float(b[:, 1].double().mean()) - tv_top) < 0.5
    # reproducible by seed, per sample different
    b2 = crop_boxes(n, H, W, (0.5, 1.0), (3 / 4, 4 / 3), torch.Generator().manual_seed(0))
    assert torch.equal(b, b2) and len({tuple(r) for r in b[:50].tolist()}) > 40


def test_resized_crop_batch_matches_torchvision():
    x = _images(n=3, size=32)
    boxes = torch.tensor([[4.0, 6.0, 24.0, 26.0], [0.0, 0.0, 32.0, 32.0], [3.0, 1.0, 30.0, 25.0]])
    got = resized_crop_batch(x, boxes, 40)  # enlarging: bilinear at pixel centres, as torchvision
    for i, (x1, y1, x2, y2) in enumerate(boxes.int().tolist()):
        want = TF.resized_crop(x[i], y1, x1, y2 - y1, x2 - x1, [40, 40], antialias=True)
        # interior equal; the outermost ring may read the pixels just outside the crop
        torch.testing.assert_close(got[i, :, 2:-2, 2:-2], want[:, 2:-2, 2:-2], rtol=0, atol=1e-5)
        assert float((got[i] - want).abs().mean()) < 5e-3
    small = resized_crop_batch(x, boxes, 12)  # shrinking: box-filtered, close to torchvision's antialias
    for i, (x1, y1, x2, y2) in enumerate(boxes.int().tolist()):
        want = TF.resized_crop(x[i], y1, x1, y2 - y1, x2 - x1, [12, 12], antialias=True)
        assert float((small[i] - want).abs().mean()) < 0.03


def test_identity_settings_give_the_normalised_image():
    x = (_images(n=4, size=16) * 255).round().to(torch.uint8)
    aug = BatchTwoViewAugment(16, scale=(1.0, 1.0), jitter=0.0, p_gray=0.0, p_blur=0.0, vertical_flip=False)
    v = aug(x, seed=3)
    norm = v2.Normalize(list(aug.mean), list(aug.std))
    base = norm(x.float() / 255)
    for b in range(4):
        for k in range(2):  # each view is the image or its mirror
            assert torch.allclose(v[b, k], base[b], atol=1e-5) or torch.allclose(v[b, k], base[b].flip(-1), atol=1e-5)


def test_views_reproducible_per_sample_and_close_to_the_cpu_recipe():
    g = torch.Generator().manual_seed(1)
    one = (torch.rand(1, 3, 32, 32, generator=g) * 255).to(torch.uint8)
    x = one.expand(64, 3, 32, 32).contiguous()  # the same image 64 times
    aug = BatchTwoViewAugment(24)
    v = aug(x, seed=batch_seed(0, 5))
    assert v.shape == (64, 2, 3, 24, 24) and v.dtype == torch.float32
    assert torch.equal(v, aug(x, seed=batch_seed(0, 5)))
    assert not torch.equal(v, aug(x, seed=batch_seed(0, 6)))
    flat = v.reshape(128, -1)
    assert len({tuple(r[:8].tolist()) for r in flat}) > 120  # per-sample parameters: (almost) all differ
    # the same recipe as the CPU transform: per-image statistics agree in distribution
    torch.manual_seed(0)
    cpu = torch.stack([TwoViewTransform(24)(one[0]) for _ in range(64)])
    for stat in (lambda t: t.mean(dim=(-3, -2, -1)), lambda t: t.std(dim=(-3, -2, -1))):
        a, b = stat(v).flatten(), stat(cpu).flatten()
        assert abs(float(a.mean() - b.mean())) < 0.15 * float(b.std() + 1e-3) + 0.05
        assert 0.6 < float(a.std() / b.std()) < 1.6


def test_channels_last_and_bad_input():
    x = torch.randint(0, 256, (2, 20, 20, 3), dtype=torch.uint8)  # HWC is accepted
    v = BatchTwoViewAugment(16, channels_last=True)(x, seed=0)
    assert v.shape == (2, 2, 3, 16, 16) and v.flatten(0, 1).is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(v, BatchTwoViewAugment(16)(x, seed=0), rtol=0, atol=0)
    with pytest.raises(ValueError, match="uint8 tensor"):
        BatchTwoViewAugment(16)(torch.rand(2, 3, 16, 16))
    with pytest.raises(ValueError, match="size must be >= 8"):
        BatchTwoViewAugment(4)


def test_uint8_images_dataset():
    class DS:
        images = np.random.default_rng(0).integers(0, 256, (5, 8, 8, 3), dtype=np.uint8)
        labels = np.arange(5)

    ds = UInt8Images(DS(), pin=False)
    img, y = ds[2]
    assert img.shape == (3, 8, 8) and img.dtype == torch.uint8 and y == 2
    assert torch.equal(img.permute(1, 2, 0), torch.from_numpy(DS.images[2]))

    class Vec:
        images = np.zeros((3, 4), np.float32)
        labels = np.arange(3)

    with pytest.raises(ValueError, match="augment_on='cpu'"):
        UInt8Images(Vec())
    assert math.isfinite(batch_seed(2**40, 10**9))


class _TinyUInt8:
    """24 uint8 images of 4 colour classes (the shape of an ArrayDataset)."""

    def __init__(self):
        g = np.random.default_rng(0)
        self.labels = np.arange(24) % 4
        base = np.array([[220, 30, 30], [180, 60, 20], [30, 30, 220], [20, 60, 180]], np.float64)
        self.images = np.clip(base[self.labels][:, None, None, :] + g.normal(0, 40, (24, 12, 12, 3)), 0, 255).astype(
            np.uint8
        )


def test_fit_with_device_augmentation_resumes_bit_identically(tmp_path):
    from hierviz.geometry import get_geometry
    from hierviz.hierarchy import LabelTree
    from hierviz.methods import build_objective
    from hierviz.models import build_model
    from hierviz.training import TrainConfig, fit, seed_everything

    tree = LabelTree.from_nested({"root": {"p": ["a", "b"], "q": ["c", "d"]}})
    data = UInt8Images(_TinyUInt8(), pin=False)
    aug = BatchTwoViewAugment(12)

    def run(folder, **kw):
        seed_everything(0)
        model = build_model("small_cnn", get_geometry("euclidean"), embed_dim=8, width=4)
        cfg = TrainConfig(epochs=2, batch_size=8, warmup_epochs=1, progress=False, checkpoint_dir=folder, **kw)
        obj = build_objective("supcon", tree, get_geometry("euclidean"))
        return fit(cfg, model, obj, data, device_augment=aug, channels_last=True)

    ref = run(tmp_path / "a")
    assert len(ref.step_history["loss"]) == 6 and all(math.isfinite(v) for v in ref.step_history["loss"])

    def crash(epoch, info):
        raise KeyboardInterrupt

    seed_everything(0)
    model = build_model("small_cnn", get_geometry("euclidean"), embed_dim=8, width=4)
    cfg = TrainConfig(epochs=2, batch_size=8, warmup_epochs=1, progress=False, checkpoint_dir=tmp_path / "b")
    with pytest.raises(KeyboardInterrupt):
        fit(cfg, model, build_objective("supcon", tree, get_geometry("euclidean")), data, device_augment=aug,
            channels_last=True, callbacks=[crash])  # fmt: skip
    torch.manual_seed(123)
    res = run(tmp_path / "b", resume=True)
    assert res.resumed_from == 1 and res.step_history == ref.step_history
    for k, v in ref.model.state_dict().items():
        assert torch.equal(v, res.model.state_dict()[k]), k


def test_config_keys_choose_the_path_and_leave_old_fingerprints_alone():
    from hierviz.experiments.compare import _speed_options
    from hierviz.experiments.config import ConfigError, ExperimentConfig, resolve_config
    from hierviz.experiments.records import fingerprint

    d = ExperimentConfig().to_dict()
    old = {k: dict(v) if isinstance(v, dict) else v for k, v in d.items()}
    for key in ("augment_on", "channels_last", "compile"):
        del old["train"][key]
    for key in ("persistent_workers", "prefetch_factor"):
        del old["data"][key]
    assert fingerprint(d) == fingerprint(old)  # runs recorded before these keys still resume
    changed = ExperimentConfig().to_dict()
    changed["train"]["augment_on"] = "device"
    assert fingerprint(changed) != fingerprint(d)

    ds = _TinyUInt8()
    cpu = _speed_options(resolve_config("quick-ham10000", {"train.device": "cpu"}), ds)
    assert cpu == {"augment_on": "cpu", "channels_last": False, "loader_options": None, "device_augment": None}
    dev = _speed_options(
        resolve_config(
            "quick-ham10000",
            {"train.device": "cpu", "train.augment_on": "device", "data.persistent_workers": True,
             "data.prefetch_factor": 3},
        ),
        ds,
    )  # fmt: skip
    assert dev["augment_on"] == "device" and dev["loader_options"] == {"persistent_workers": True, "prefetch_factor": 3}
    with pytest.raises(ConfigError, match="train.augment_on: must be 'auto', 'cpu' or 'device'"):
        resolve_config("quick-ham10000", {"train.augment_on": "gpu"})
    with pytest.raises(ConfigError, match="data.prefetch_factor"):
        resolve_config("quick-ham10000", {"data.prefetch_factor": 0})
