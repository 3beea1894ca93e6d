"""Encoders, heads and the map onto the manifold (hierviz.models)."""

from __future__ import annotations

import math

import geoopt
import pytest
import torch
from torch import nn

from hierviz.geometry import get_geometry
from hierviz.models import (
    ENCODERS,
    EmbeddingModel,
    HyperbolicHead,
    L2Normalize,
    ProjectionHead,
    SmallCNN,
    build_encoder,
    build_model,
    encoder_inputs,
    manifold_head,
    register_encoder,
    resnet_encoder,
)

# ----------------------------------------------------------------------------- encoders


def test_small_cnn_shape_and_out_dim():
    enc = SmallCNN(width=4)
    assert enc.out_dim == 32
    for size in (16, 32, 45):
        out = enc(torch.randn(3, 3, size, size))
        assert out.shape == (3, 32)
        assert torch.isfinite(out).all()


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_small_cnn_rejects_bad_width(bad):
    with pytest.raises(ValueError, match="width"):
        SmallCNN(width=bad)


def test_resnet18_small_input_stem():
    net = resnet_encoder("resnet18", small_input=True)
    assert net.conv1.kernel_size == (3, 3) and net.conv1.stride == (1, 1)
    assert isinstance(net.maxpool, nn.Identity) and isinstance(net.fc, nn.Identity)
    assert net.out_dim == 512
    net.eval()
    assert net(torch.randn(2, 3, 16, 16)).shape == (2, 512)


def test_resnet18_imagenet_stem_kept_when_not_small():
    net = resnet_encoder("resnet18", small_input=False)
    assert net.conv1.kernel_size == (7, 7) and net.conv1.stride == (2, 2)
    assert isinstance(net.maxpool, nn.MaxPool2d)


def test_resnet50_feature_dim():
    net = build_encoder("resnet50")
    assert net.out_dim == 2048
    net.eval()
    assert net(torch.randn(1, 3, 8, 8)).shape == (1, 2048)


def test_unknown_encoder_lists_valid_names():
    with pytest.raises(ValueError) as ei:
        build_encoder("vgg16")
    for name in ENCODERS:
        assert name in str(ei.value)
    with pytest.raises(ValueError, match="resnet18"):
        resnet_encoder("resnet34")


def test_encoders_declare_what_they_read():
    import hierviz.methods  # noqa: F401  (registers paper 03's mapper)
    from hierviz.models.text import text_encoder

    assert {n: encoder_inputs(n) for n in ("small_cnn", "resnet18", "mlp", "mapper", "hyilr-text")} == {
        "small_cnn": "images",
        "resnet18": "images",
        "mlp": "vectors",
        "mapper": "vectors",
        "hyilr-text": "text",
    }
    assert encoder_inputs(text_encoder(8, 1, 2, 20, 6)) == "text"
    with pytest.raises(ValueError, match="inputs must be one of"):
        register_encoder("toy-bad", inputs="audio")
    assert "toy-bad" not in ENCODERS
    with pytest.raises(ValueError, match="mlp"):
        encoder_inputs("mlq")


def test_a_replaced_encoder_reads_images_unless_it_says_so_and_the_old_attribute_warns():
    register_encoder("toy-vec", inputs="vectors")(lambda **kw: None)
    try:
        ENCODERS.register("toy-vec", lambda **kw: None, replace=True)  # a new factory, declared nothing
        assert encoder_inputs("toy-vec") == "images"

        def old(**kw):
            return None

        old.text = True  # hierviz 0.3's declaration
        ENCODERS.register("toy-vec", old, replace=True)
        with pytest.warns(DeprecationWarning, match=r"register_encoder\('toy-vec', inputs='text'\)"):
            assert encoder_inputs("toy-vec") == "text"
    finally:
        ENCODERS.unregister("toy-vec")


def test_pretrained_state_dict_is_loaded_except_mismatched_stem(tmp_path):
    import torchvision

    torch.manual_seed(0)
    donor = torchvision.models.resnet18(weights=None)
    path = tmp_path / "r18.pt"
    torch.save(donor.state_dict(), path)
    net = resnet_encoder("resnet18", small_input=True, pretrained=path)
    assert torch.equal(net.layer1[0].conv1.weight, donor.layer1[0].conv1.weight)
    assert torch.equal(net.bn1.running_var, donor.bn1.running_var)
    assert net.conv1.weight.shape == (64, 3, 3, 3)  # the 7x7 stem could not be used
    # full stem when the input is ImageNet-sized
    net2 = resnet_encoder("resnet18", small_input=False, pretrained=path)
    assert torch.equal(net2.conv1.weight, donor.conv1.weight)


def test_pretrained_missing_file_and_wrong_contents(tmp_path):
    with pytest.raises(FileNotFoundError, match="never downloads"):
        build_encoder("small_cnn", pretrained=tmp_path / "nope.pt")
    bad = tmp_path / "bad.pt"
    torch.save({"foo": torch.zeros(3)}, bad)
    with pytest.raises(ValueError, match="no tensor"):
        build_encoder("small_cnn", pretrained=bad)


# ----------------------------------------------------------------------------- heads


def test_projection_head_structure_and_shape():
    head = ProjectionHead(16, 32, 8)
    kinds = [type(m) for m in head.net]
    assert kinds == [nn.Linear, nn.BatchNorm1d, nn.ReLU, nn.Linear]  # paper 01 §4.2
    assert head(torch.randn(5, 16)).shape == (5, 8)
    with pytest.raises(ValueError, match="hidden_dim"):
        ProjectionHead(16, 0, 8)


def test_l2normalize_unit_norm_and_float32_under_autocast():
    x = torch.randn(7, 5) * 100
    z = L2Normalize()(x)
    torch.testing.assert_close(z.norm(dim=-1), torch.ones(7))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert L2Normalize()(x.bfloat16()).dtype == torch.float32


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
def test_poincare_head_inside_ball_even_for_huge_inputs(c):
    geo = get_geometry("poincare", c=c)
    head = HyperbolicHead(geo, clip_r=None, scale_init=1.0)  # no feature clipping: only proj keeps it inside
    v = torch.randn(64, 6) * torch.logspace(-3, 6, 64)[:, None]
    z = head(v)
    assert torch.isfinite(z).all()
    assert (z.norm(dim=-1) < 1 / math.sqrt(c)).all()


@pytest.mark.parametrize("c,r", [(1.0, 2.0), (2.0, 1.0), (0.5, 3.0)])
def test_feature_clipping_radius_hand_computed(c, r):
    # ||expmap0(v)|| = tanh(sqrt(c) ||v||)/sqrt(c); clipping ||v|| to r gives tanh(sqrt(c) r)/sqrt(c)
    geo = get_geometry("poincare", c=c)
    head = HyperbolicHead(geo, clip_r=r, scale_init=1.0, bound="clip")  # the 0.2 head's hard clip
    v = torch.randn(10, 4, dtype=torch.float64) * 50
    expected = math.tanh(math.sqrt(c) * r) / math.sqrt(c)
    torch.testing.assert_close(head(v).norm(dim=-1), torch.full((10,), expected, dtype=torch.float64))


def test_poincare_head_matches_geoopt_expmap0_below_clip_radius():
    geo = get_geometry("poincare", c=1.0)
    head = HyperbolicHead(geo, clip_r=2.0, scale_init=1.0, bound="clip")
    v = torch.randn(20, 5, dtype=torch.float64)
    v = v / v.norm(dim=-1, keepdim=True) * torch.linspace(0.01, 1.9, 20, dtype=torch.float64)[:, None]
    ref = geoopt.PoincareBall(c=1.0).expmap0(v)
    torch.testing.assert_close(head(v), ref)
    # direction is preserved
    torch.testing.assert_close(
        torch.nn.functional.cosine_similarity(head(v), v, dim=-1), torch.ones(20, dtype=torch.float64)
    )


@pytest.mark.parametrize("k", [1.0, 2.0])
def test_lorentz_head_on_hyperboloid(k):
    geo = get_geometry("lorentz", c=k)
    head = HyperbolicHead(geo, clip_r=2.0, scale_init=1.0)
    x = head(torch.randn(30, 4, dtype=torch.float64) * 3)
    assert x.shape == (30, 5)
    inner = -(x[:, 0] ** 2) + (x[:, 1:] ** 2).sum(-1)
    torch.testing.assert_close(inner, torch.full((30,), -1.0 / k, dtype=torch.float64), rtol=1e-6, atol=1e-6)
    assert (x[:, 0] > 0).all()


def test_hyperbolic_head_float32_under_autocast_and_float64_kept():
    geo = get_geometry("poincare")
    head = HyperbolicHead(geo)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = head(torch.randn(4, 3).bfloat16())
    assert z.dtype == torch.float32
    assert head(torch.randn(4, 3, dtype=torch.float64)).dtype == torch.float64


def test_hyperbolic_head_finite_gradient_at_zero():
    head = HyperbolicHead(get_geometry("poincare"))
    v = torch.zeros(3, 4, requires_grad=True)
    head(v).sum().backward()
    assert torch.isfinite(v.grad).all()


def test_hyperbolic_head_rejects_euclidean_and_bad_clip():
    with pytest.raises(ValueError, match="geometry"):
        HyperbolicHead(get_geometry("euclidean"))
    with pytest.raises(ValueError, match="clip_r"):
        HyperbolicHead(get_geometry("poincare"), clip_r=0.0)
    assert isinstance(manifold_head(get_geometry("euclidean")), L2Normalize)
    assert isinstance(manifold_head(get_geometry("poincare")), HyperbolicHead)


# ----------------------------------------------------------------------------- full model


@pytest.mark.parametrize("geometry,dim", [("euclidean", 8), ("poincare", 8), ("lorentz", 9)])
def test_embedding_model_shapes_and_membership(geometry, dim):
    torch.manual_seed(0)
    geo = get_geometry(geometry)
    model = build_model("small_cnn", geo, embed_dim=8, width=4, num_classes=5)
    out = model(torch.randn(3, 2, 3, 16, 16))  # B=3 images, V=2 views
    assert out["features"].shape == (3, 2, 32)
    assert out["z"].shape == (3, 2, dim)
    assert out["logits"].shape == (3, 2, 5)
    z = out["z"].reshape(-1, dim)
    if geometry == "euclidean":
        torch.testing.assert_close(z.norm(dim=-1), torch.ones(6))
    elif geometry == "poincare":
        assert (z.norm(dim=-1) < 1.0).all()
    else:
        torch.testing.assert_close(-(z[:, 0] ** 2) + (z[:, 1:] ** 2).sum(-1), -torch.ones(6), atol=1e-4, rtol=1e-4)
    model.eval()
    single = model(torch.randn(4, 3, 16, 16))
    assert single["z"].shape == (4, dim) and single["logits"].shape == (4, 5)
    feats = model.embed(torch.randn(4, 3, 16, 16), use="features")
    assert feats.shape == (4, 32 + (geometry == "lorentz"))
    geo.check_point(feats)  # on the manifold too


def test_embedding_model_without_classifier_and_bad_input():
    model = build_model("small_cnn", get_geometry("euclidean"), embed_dim=4, width=2)
    assert model(torch.randn(2, 3, 8, 8))["logits"] is None
    with pytest.raises(ValueError, match="shape"):
        model(torch.randn(3, 8, 8))
    with pytest.raises(ValueError, match="use"):
        model.embed(torch.randn(2, 3, 8, 8), use="logits")
    with pytest.raises(ValueError, match="num_classes"):
        EmbeddingModel(SmallCNN(2), ProjectionHead(16, 16, 4), get_geometry("euclidean"), num_classes=0)
    with pytest.raises(ValueError, match="out_dim"):
        EmbeddingModel(nn.Flatten(), ProjectionHead(16, 16, 4), get_geometry("euclidean"))


def test_parameter_groups_partition_the_model():
    model = build_model("small_cnn", get_geometry("poincare"), embed_dim=4, width=2, num_classes=3)
    back = {id(p) for p in model.backbone_parameters()}
    head = {id(p) for p in model.head_parameters()}
    assert back.isdisjoint(head)
    assert back | head == {id(p) for p in model.parameters()}
    assert {id(p) for p in model.classifier.parameters()} <= head


def test_embedding_model_float32_z_under_autocast():
    model = build_model("small_cnn", get_geometry("poincare"), embed_dim=4, width=2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(torch.randn(4, 2, 3, 8, 8))
    assert out["z"].dtype == torch.float32
    assert (out["z"].norm(dim=-1) < 1).all()
