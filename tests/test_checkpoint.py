"""Checksummed atomic checkpoints and the RNG state they carry."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from hierviz.training.checkpoint import (
    CheckpointError,
    atomic_save,
    load_checkpoint,
    previous_checkpoint,
    rng_state,
    set_rng_state,
)


def test_round_trip_and_previous_kept(tmp_path):
    p = tmp_path / "run" / "checkpoint.pt"
    state = {"epoch": 1, "w": torch.arange(5), "opt": {"lr": 0.1, "steps": [1, 2]}, "name": "supcon"}
    assert atomic_save(state, p) == p
    got = load_checkpoint(p)
    assert got["epoch"] == 1 and torch.equal(got["w"], torch.arange(5)) and got["opt"] == state["opt"]
    assert not previous_checkpoint(p).exists()  # nothing to keep after the first save
    atomic_save({"epoch": 2, "w": torch.arange(6)}, p)
    assert load_checkpoint(p)["epoch"] == 2 and torch.equal(load_checkpoint(p)["w"], torch.arange(6))
    assert load_checkpoint(p.parent)["epoch"] == 2  # the run folder works too
    assert previous_checkpoint(p) == p.with_name("checkpoint.pt.prev")
    assert load_checkpoint(previous_checkpoint(p))["epoch"] == 1
    atomic_save({"epoch": 3}, p)
    assert load_checkpoint(previous_checkpoint(p))["epoch"] == 2  # .prev is always the save before
    assert sorted(f.name for f in p.parent.iterdir()) == ["checkpoint.pt", "checkpoint.pt.prev"]  # no temp files
    assert p.read_bytes().startswith(b"HIERVIZ-CHECKPOINT 1\nsha256 ")


def test_keep_previous_false(tmp_path):
    p = tmp_path / "c.pt"
    atomic_save({"epoch": 1}, p, keep_previous=False)
    atomic_save({"epoch": 2}, p, keep_previous=False)
    assert load_checkpoint(p)["epoch"] == 2 and not previous_checkpoint(p).exists()


@pytest.mark.parametrize(
    "damage, why",
    [
        ("flip", "sha256 mismatch: the file changed after it was written"),
        ("truncate", "sha256 mismatch"),
        ("header", "damaged header"),
    ],
)
def test_damaged_file_is_refused_naming_it(tmp_path, damage, why):
    p = tmp_path / "checkpoint.pt"
    atomic_save({"epoch": 1}, p)
    atomic_save({"epoch": 2, "x": torch.randn(100)}, p)
    data = bytearray(p.read_bytes())
    if damage == "flip":
        data[len(data) - 50] ^= 0x01  # one bit of the payload
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[25] ^= 0x01  # inside "sha256 "
    p.write_bytes(bytes(data))
    prev = previous_checkpoint(p)
    with pytest.raises(CheckpointError) as ei:
        load_checkpoint(p)
    assert str(ei.value).startswith(f"checkpoint {str(p)!r} is corrupt ({why}")
    assert str(ei.value).endswith(
        f"refusing to resume from it; the previous checkpoint is kept at {str(prev)!r}: move it to "
        "'checkpoint.pt' to resume from the epoch before, or delete the run folder to start afresh"
    )
    assert isinstance(ei.value, ValueError)
    assert load_checkpoint(prev)["epoch"] == 1


def test_damaged_file_without_a_previous_one(tmp_path):
    p = tmp_path / "checkpoint.pt"
    atomic_save({"epoch": 1}, p)
    p.write_bytes(p.read_bytes()[:-10])
    with pytest.raises(
        CheckpointError,
        match=r"no previous checkpoint exists; delete the run folder \(or drop "
        r"--resume\) to start afresh$",
    ):
        load_checkpoint(p)


def test_missing_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no checkpoint at '.*checkpoint\.pt'"):
        load_checkpoint(tmp_path)


def test_hierviz_01_bare_files_still_load(tmp_path):
    p = tmp_path / "old.pt"
    torch.save({"epoch": 3, "model": {"w": torch.ones(2)}}, p)
    with pytest.warns(UserWarning, match="without a sha256 digest"):  # said, not silent
        got = load_checkpoint(p)
    assert got["epoch"] == 3 and torch.equal(got["model"]["w"], torch.ones(2))
    # a damaged 0.1 file has no digest but still fails to unpickle: refused, named
    p.write_bytes(p.read_bytes()[:40])
    with pytest.raises(CheckpointError, match=r"^checkpoint '.*old\.pt' is corrupt \("), pytest.warns(UserWarning):
        load_checkpoint(p)
    # random bytes are never unpickled as code
    p.write_bytes(np.random.default_rng(0).bytes(200))
    with pytest.raises(CheckpointError, match=r"old\.pt' is corrupt"), pytest.warns(UserWarning):
        load_checkpoint(p)


def test_rng_state_restores_every_stream_exactly():
    gen = torch.Generator().manual_seed(5)
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    state = rng_state(gen)
    want = (random.random(), np.random.rand(), torch.rand(1).item(), torch.rand(1, generator=gen).item())
    random.seed(9), np.random.seed(9), torch.manual_seed(9), gen.manual_seed(9)
    # as a checkpoint delivers it: saved and loaded with a map_location
    import io

    buf = io.BytesIO()
    torch.save(state, buf)
    loaded = torch.load(io.BytesIO(buf.getvalue()), map_location="cpu", weights_only=True)
    set_rng_state(loaded, gen)
    got = (random.random(), np.random.rand(), torch.rand(1).item(), torch.rand(1, generator=gen).item())
    assert got == want
