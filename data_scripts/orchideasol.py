#!/usr/bin/env python3
"""Turn a local copy of OrchideaSOL into log-mel features (Paper 04 (Generalised triplets) §III).

Usage::

    python data_scripts/orchideasol.py --from-dir /path/to/OrchideaSOL2020 [--out DIR]

OrchideaSOL (Cella et al., ISMIR 2020) cannot be downloaded without an account, so this script
only converts a copy you already have. Every ``.wav`` below ``--from-dir`` is one sample; its
folders give its labels, as the paper's four levels: family / instrument / mute / playing
technique (``Brass/Horn/ordinario/...``: the first ``--levels`` folder names under the root
form the leaf, e.g. ``Brass/Horn/Sordina/flatterzunge``). Following §III-C, each file is
mixed to mono, resampled to 44.1 kHz, zero-padded or cut to one second, and turned into a
dB-scaled mel spectrogram with ``n_fft = 2048``, ``hop_length = 512`` and ``n_mels = 128``
(:func:`log_mel`; torchaudio is used when installed, else numpy/scipy).

Writes ``<out>/orchideasol_logmel.npz`` with ``features`` (N, 128, T) float32, ``labels``
(N,) int64, ``classes`` (C,) leaf paths, ``files`` (N,) relative paths, and
``<out>/orchideasol_tree.json`` (the full tree form, ``paths``), so that::

    f = np.load("orchideasol_logmel.npz")
    ds = ArrayDataset(f["features"].reshape(len(f["labels"]), -1), f["labels"], list(f["classes"]))

is a vector dataset for the ``mlp`` encoder, with the tree ``orchideasol_tree.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

SR = 44100
N_FFT, HOP, N_MELS = 2048, 512, 128
CITATION = (
    "Cella C-E, Ghisi D, Lostanlen V, Lévy F, Fineberg J, Maresz Y. OrchideaSOL: a dataset of extended "
    "instrumental techniques for computer-aided orchestration. ISMIR 2020 (late-breaking demo); arXiv:2007.00763"
)


def hz_to_mel(f: np.ndarray) -> np.ndarray:
    """HTK mel scale, ``2595 log10(1 + f / 700)``."""
    return 2595.0 * np.log10(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def mel_to_hz(m: np.ndarray) -> np.ndarray:
    """Inverse of :func:`hz_to_mel`."""
    return 700.0 * (10.0 ** (np.asarray(m, dtype=np.float64) / 2595.0) - 1.0)


def mel_filterbank(sr: int = SR, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    """(n_mels, n_fft // 2 + 1) triangular HTK mel filters from 0 Hz to sr / 2, unnormalised
    (peak 1), as ``torchaudio.functional.melscale_fbanks(..., norm=None, mel_scale="htk")``."""
    freqs = np.linspace(0.0, sr / 2.0, n_fft // 2 + 1)
    pts = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2.0), n_mels + 2))
    lo, mid, hi = pts[:-2, None], pts[1:-1, None], pts[2:, None]
    up = (freqs[None, :] - lo) / (mid - lo)
    down = (hi - freqs[None, :]) / (hi - mid)
    return np.maximum(0.0, np.minimum(up, down))


def log_mel(audio: np.ndarray, sr: int = SR, n_fft: int = N_FFT, hop: int = HOP, n_mels: int = N_MELS) -> np.ndarray:
    """dB-scaled mel power spectrogram, (n_mels, 1 + len(audio) // hop), float32.

    Centred frames (reflect padding by n_fft // 2), periodic Hann window, power 2, HTK mel
    filters, ``10 log10(max(S, 1e-10))`` clipped to 80 dB below the maximum (the usual
    ``AmplitudeToDB(top_db=80)``). Uses torchaudio when installed, else numpy.
    """
    x = np.asarray(audio, dtype=np.float64).reshape(-1)
    try:  # the reference implementation when it is there
        import torch
        import torchaudio

        spec = torchaudio.transforms.MelSpectrogram(
            sample_rate=sr, n_fft=n_fft, hop_length=hop, n_mels=n_mels, mel_scale="htk", norm=None, power=2.0
        )(torch.as_tensor(x, dtype=torch.float32))
        S = spec.double().numpy()
    except ImportError:
        pad = np.pad(x, n_fft // 2, mode="reflect")
        n_frames = 1 + (len(pad) - n_fft) // hop
        idx = np.arange(n_fft)[None, :] + hop * np.arange(n_frames)[:, None]
        window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)  # periodic Hann
        power = np.abs(np.fft.rfft(pad[idx] * window, axis=1)) ** 2  # (frames, n_fft//2+1)
        S = mel_filterbank(sr, n_fft, n_mels) @ power.T
    db = 10.0 * np.log10(np.maximum(S, 1e-10))
    return np.maximum(db, db.max() - 80.0).astype(np.float32)


def read_audio(path: Path, sr: int = SR, seconds: float = 1.0) -> np.ndarray:
    """Mono float audio of one second at ``sr``: WAV via scipy, resampled (polyphase), padded or cut."""
    from math import gcd

    from scipy.io import wavfile
    from scipy.signal import resample_poly

    rate, data = wavfile.read(path)
    x = np.asarray(data, dtype=np.float64)
    if np.issubdtype(data.dtype, np.integer):
        x /= float(np.iinfo(data.dtype).max)
    if x.ndim == 2:
        x = x.mean(axis=1)
    if rate != sr:
        g = gcd(int(rate), int(sr))
        x = resample_poly(x, sr // g, int(rate) // g)
    n = int(round(seconds * sr))
    return np.pad(x, (0, max(0, n - len(x))))[:n]


def convert(root: Path, out: Path, levels: int = 4) -> tuple[Path, Path]:
    """Convert every WAV below ``root``; return the npz and tree paths (see the module docstring).

    Raises
    ------
    FileNotFoundError
        ``root`` is not a folder or holds no ``.wav`` file deep enough for ``levels`` labels.
    """
    from _common import save_npz
    from tqdm.auto import tqdm

    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"--from-dir {root}: not a folder (pass your OrchideaSOL copy)")
    wavs = sorted(p for p in root.rglob("*") if p.suffix.lower() == ".wav" and len(p.relative_to(root).parts) > levels)
    if not wavs:
        raise FileNotFoundError(
            f"--from-dir {root}: no .wav file {levels} folders deep (family/instrument/mute/technique/file.wav)"
        )
    leaves = ["/".join(p.relative_to(root).parts[:levels]) for p in wavs]
    classes = sorted(set(leaves))
    index = {c: i for i, c in enumerate(classes)}
    feats = np.stack([log_mel(read_audio(p)) for p in tqdm(wavs, desc="log-mel", unit="file")])
    out.mkdir(parents=True, exist_ok=True)
    npz = save_npz(
        out / "orchideasol_logmel.npz",
        {
            "features": feats,
            "labels": np.array([index[c] for c in leaves], dtype=np.int64),
            "classes": np.array(classes),
            "files": np.array([str(p.relative_to(root)) for p in wavs]),
            "citation": np.array(CITATION),
        },
    )
    paths = [["root", *["/".join(c.split("/")[: k + 1]) for k in range(levels)]] for c in classes]
    tree = out / "orchideasol_tree.json"
    tree.write_text(
        json.dumps(
            {
                "name": "orchideasol",
                "source": f"{CITATION}. Levels: family / instrument / mute / playing technique (Paper 04 §III-A), "
                "read from the folder names; a node is its path from the root.",
                "leaf_order": classes,
                "paths": paths,
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    return npz, tree


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    from _common import default_out_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from-dir", type=Path, required=True, help="your local OrchideaSOL folder")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: $HIERVIZ_DATA or ../shared/data)")
    ap.add_argument("--levels", type=int, default=4, help="folder levels that form the leaf label (default 4)")
    args = ap.parse_args(argv)
    try:
        npz, tree = convert(args.from_dir, args.out or default_out_dir(), levels=args.levels)
    except FileNotFoundError as exc:
        print(f"orchideasol: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {npz} and {tree}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
