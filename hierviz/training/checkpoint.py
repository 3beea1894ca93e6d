"""Checkpoints that cannot be lost or silently corrupted, and the RNG state they carry.

A checkpoint file is a short header followed by a ``torch.save`` payload::

    HIERVIZ-CHECKPOINT 1\\n
    sha256 <64 hex digits>\\n
    <payload bytes>

:func:`atomic_save` writes it to a temporary file in the same folder, ``fsync``\\ s it, keeps
the checkpoint it replaces as ``<name>.prev`` (a hard link, or a copy where links are not
supported) and only then renames the new file over the old one, so a crash at any moment
leaves at least one complete, verified checkpoint. :func:`load_checkpoint` verifies the
digest before unpickling (``weights_only``: no code runs) and raises
:class:`CheckpointError`, naming the file and the kept previous one, on any mismatch.
Files written by hierviz 0.1 (a bare ``torch.save``) are still read, without a digest, with a
one-line UserWarning saying the file was not verified.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "CHECKPOINT_NAME",
    "CheckpointError",
    "atomic_save",
    "load_checkpoint",
    "previous_checkpoint",
    "rng_state",
    "set_rng_state",
]

#: File name of the per-epoch checkpoint inside ``TrainConfig.checkpoint_dir``.
CHECKPOINT_NAME = "checkpoint.pt"

_MAGIC = b"HIERVIZ-CHECKPOINT 1\n"


class CheckpointError(ValueError):
    """A checkpoint file that is truncated, corrupt or fails its sha256 check."""


def previous_checkpoint(path: str | os.PathLike) -> Path:
    """Where :func:`atomic_save` keeps the checkpoint that ``path`` replaced: ``<path>.prev``."""
    path = Path(path)
    return path.with_name(path.name + ".prev")


# --------------------------------------------------------------------------- RNG state


def rng_state(gen: torch.Generator) -> dict[str, Any]:
    """Python, NumPy, torch (CPU and every CUDA device) and loader-generator states.

    Parameters
    ----------
    gen : torch.Generator
        The DataLoader's shuffling generator.

    Returns
    -------
    dict
        Tensors only on the CPU, so the checkpoint loads on any device.
    """
    np_state = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": {
            "kind": np_state[0],
            "key": torch.from_numpy(np.asarray(np_state[1], dtype=np.int64)),
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "cached_gaussian": float(np_state[4]),
        },
        "torch": torch.get_rng_state(),
        "loader": gen.get_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = [s.detach().cpu() for s in torch.cuda.get_rng_state_all()]
    return state


def set_rng_state(state: dict[str, Any], gen: torch.Generator) -> None:
    """Restore the states saved by :func:`rng_state`.

    Every tensor goes through ``.cpu()`` first (a checkpoint loaded with
    ``map_location="cuda"`` holds CUDA tensors, which ``.numpy()`` and ``set_rng_state``
    refuse; some loaders hand back other integer dtypes), and CUDA states are restored per
    device with ``torch.cuda.set_rng_state_all``, for as many devices as both the checkpoint
    and this machine have.

    Parameters
    ----------
    state : dict
        As returned by :func:`rng_state` (possibly loaded with any ``map_location``).
    gen : torch.Generator
        The DataLoader's shuffling generator (restored in place).

    Warns
    -----
    UserWarning
        The checkpoint holds CUDA states for a different number of devices than this
        machine has (the common devices are restored, the rest keep their seeds), or CUDA
        states while CUDA is unavailable (resuming a GPU run on a CPU: the CPU streams are
        restored, the CUDA ones are dropped).
    """
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    n = state["numpy"]
    key = torch.as_tensor(n["key"]).cpu().numpy().astype(np.uint32)
    np.random.set_state((n["kind"], key, n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(_cpu_uint8(state["torch"]))
    gen.set_state(_cpu_uint8(state["loader"]))
    saved = [_cpu_uint8(s) for s in state.get("cuda") or ()]
    if not saved:
        return
    if not torch.cuda.is_available():
        warnings.warn(
            f"rng: the checkpoint holds CUDA RNG states of {len(saved)} device(s) but CUDA is not available "
            "here; the CPU streams are restored and GPU-side randomness will differ from the interrupted run",
            stacklevel=2,
        )
        return
    have = torch.cuda.device_count()
    if have != len(saved):
        warnings.warn(
            f"rng: the checkpoint holds CUDA RNG states of {len(saved)} device(s) but {have} are visible; "
            f"restoring the first {min(have, len(saved))}; GPU-side randomness may differ from the interrupted run",
            stacklevel=2,
        )
    if have <= len(saved):
        torch.cuda.set_rng_state_all(saved[:have])
    else:
        for i, s in enumerate(saved):
            torch.cuda.set_rng_state(s, device=i)


def _cpu_uint8(t: Any) -> torch.Tensor:
    """An RNG state as ``set_rng_state`` wants it: a CPU ByteTensor, whatever device/dtype it came as."""
    return torch.as_tensor(t).detach().cpu().to(torch.uint8)


# --------------------------------------------------------------------------- files


def _keep_previous(path: Path) -> None:
    """Hard-link (or copy) the current checkpoint to ``<path>.prev`` atomically."""
    if not path.is_file():
        return
    prev = previous_checkpoint(path)
    tmp = prev.with_name(f".{prev.name}.tmp-{os.getpid()}")
    if tmp.exists():
        tmp.unlink()
    try:
        os.link(path, tmp)
    except OSError:
        shutil.copyfile(path, tmp)
    os.replace(tmp, prev)


def atomic_save(obj: Any, path: str | os.PathLike, *, keep_previous: bool = True) -> Path:
    """Write ``obj`` with a sha256 header, atomically, keeping the replaced file as ``.prev``.

    Parameters
    ----------
    obj : object
        Anything ``torch.save`` accepts with ``weights_only`` loading (tensors, dicts,
        lists, numbers, strings).
    path : str or Path
        Destination; its folder is created.
    keep_previous : bool, default True
        Keep the checkpoint being replaced as ``<path>.prev``.

    Returns
    -------
    Path

    Raises
    ------
    OSError
        The folder is not writable or the disk is full; the previous checkpoint is intact.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save(obj, buf)
    payload = buf.getvalue()
    digest = hashlib.sha256(payload).hexdigest().encode("ascii")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(_MAGIC + b"sha256 " + digest + b"\n")
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        if keep_previous:
            _keep_previous(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _corrupt(path: Path, why: str) -> CheckpointError:
    prev = previous_checkpoint(path)
    if prev.is_file():
        keep = (
            f"the previous checkpoint is kept at {str(prev)!r}: move it to {path.name!r} to resume "
            "from the epoch before, or delete the run folder to start afresh"
        )
    else:
        keep = "no previous checkpoint exists; delete the run folder (or drop --resume) to start afresh"
    return CheckpointError(f"checkpoint {str(path)!r} is corrupt ({why}); refusing to resume from it; {keep}")


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read and verify a checkpoint written by :func:`atomic_save` (``weights_only``: no code runs).

    Parameters
    ----------
    path : str or Path
        A ``checkpoint.pt`` file, or the folder holding it.
    map_location : str or torch.device, default "cpu"

    Returns
    -------
    dict
        For :func:`hierviz.training.fit`'s checkpoints: ``epoch`` (epochs completed),
        ``config``, ``model``, ``optimizer``, ``scheduler``, ``scaler``, ``ema``,
        ``objective``, ``rng``, ``history``, ``step_history``, ``train_seconds``,
        ``global_step``.

    Raises
    ------
    FileNotFoundError
        No checkpoint at ``path``.
    CheckpointError
        (a ValueError) The digest does not match, the file is truncated or cannot be
        unpickled; the message names the file and the kept previous checkpoint.
    """
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    if not path.is_file():
        raise FileNotFoundError(f"path: no checkpoint at {str(path)!r}")
    data = path.read_bytes()
    if data.startswith(_MAGIC):
        head_end = data.find(b"\n", len(_MAGIC))
        line = data[len(_MAGIC) : head_end]
        if head_end < 0 or not line.startswith(b"sha256 ") or len(line) != 7 + 64:
            raise _corrupt(path, "damaged header")
        payload = data[head_end + 1 :]
        if hashlib.sha256(payload).hexdigest().encode("ascii") != line[7:]:
            raise _corrupt(path, "sha256 mismatch: the file changed after it was written")
    else:
        payload = data  # hierviz 0.1: a bare torch.save, no digest: say so (never silently), once per read
        warnings.warn(
            f"{path}: a hierviz 0.1 checkpoint without a sha256 digest, read unverified (damage shows only if "
            "torch cannot unpickle it); the next checkpoint written adds the digest",
            UserWarning,
            stacklevel=2,
        )
    try:
        return torch.load(io.BytesIO(payload), map_location=map_location, weights_only=True)
    except Exception as exc:  # truncated zip, unpickling error, ...
        raise _corrupt(
            path, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'unreadable'}"
        ) from None
