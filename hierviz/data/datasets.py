"""Image datasets as in-memory arrays: HAM10000, MedMNIST ``.npz`` files, image folders.

Everything loads into an :class:`ArrayDataset` (uint8 ``(N, H, W, 3)`` images, int64
labels, class names, optional group ids for leak-free splits, citation and licence).

Where the files come from
-------------------------
:func:`find_data_file` looks in ``$HIERVIZ_DATA``, then in ``../shared/data`` beside the
checkout. Nothing is ever downloaded here; a missing file raises
:class:`FileNotFoundError` naming the file and the ``python data_scripts/...`` command
that fetches it. The ``"ham10000-sample"`` dataset is bundled inside the package
(``hierviz/data/sample/``, CC BY-NC 4.0, see its ``NOTICE.md``), so the defaults work
with no data folder at all.

Bring your own data
-------------------
``load_dataset(path)`` accepts any MedMNIST-format ``.npz`` (``train_images``,
``train_labels``, ... ; the official split is kept in ``official_split``), a
HAM10000-style ``.npz`` (``images``, ``label``, optional ``classes``, ``lesion_id`` /
``groups``), or an image folder with one sub-folder per class. Pair it with a tree JSON
naming the classes as leaves via :func:`bind_tree`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from hierviz.data.trees import align_tree, is_placeholder_classes, load_tree

__all__ = [
    "ArrayDataset",
    "DATASETS",
    "DatasetInfo",
    "MEDMNIST_INFO",
    "bind_tree",
    "data_search_dirs",
    "find_data_file",
    "load_dataset",
    "load_image_folder",
    "load_medmnist",
    "load_npz",
]

ENV_VAR = "HIERVIZ_DATA"
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".gif", ".webp", ".ppm", ".pgm")

HAM_CLASSES = ["nv", "mel", "bkl", "bcc", "akiec", "vasc", "df"]
HAM_CITATION = (
    "Tschandl P, Rosendahl C, Kittler H. The HAM10000 dataset, a large collection of multi-source "
    "dermatoscopic images of common pigmented skin lesions. Sci Data 5:180161 (2018). "
    "doi:10.1038/sdata.2018.161. Data: Harvard Dataverse doi:10.7910/DVN/DBW86T."
)
HAM_LICENCE = "CC BY-NC 4.0 (non-commercial; copyright ViDIR Group, Medical University of Vienna)"
MEDMNIST_CITATION = (
    "Yang J, Shi R, Wei D, Liu Z, Zhao L, Ke B, Pfister H, Ni B. MedMNIST v2 - A large-scale lightweight "
    "benchmark for 2D and 3D biomedical image classification. Sci Data 10:41 (2023). "
    "doi:10.1038/s41597-022-01721-8."
)
CIFAR_CITATION = (
    "Krizhevsky A. Learning multiple layers of features from tiny images. Technical report, "
    "University of Toronto, 2009."
)


def _organs() -> list[str]:
    return [
        "bladder", "femur_left", "femur_right", "heart", "kidney_left", "kidney_right",
        "liver", "lung_left", "lung_right", "pancreas", "spleen",
    ]  # fmt: skip


#: MedMNIST v2 2-D multi-class sets: class names (label-index order, MedMNIST ``INFO``
#: with spaces/commas turned into ``_``), licence and the source dataset's citation.
MEDMNIST_INFO: dict[str, dict[str, Any]] = {
    "breastmnist": {
        "classes": ["malignant", "normal_benign"],
        "licence": "CC BY 4.0",
        "source": "Al-Dhabyani W et al. Dataset of breast ultrasound images. Data in Brief 28:104863 (2020).",
    },
    "dermamnist": {
        "classes": ["akiec", "bcc", "bkl", "df", "mel", "nv", "vasc"],
        "licence": "CC BY-NC 4.0 (derived from HAM10000)",
        "source": HAM_CITATION,
    },
    "bloodmnist": {
        "classes": [
            "basophil", "eosinophil", "erythroblast", "immature_granulocyte",
            "lymphocyte", "monocyte", "neutrophil", "platelet",
        ],  # fmt: skip
        "licence": "CC BY 4.0",
        "source": "Acevedo A et al. A dataset of microscopic peripheral blood cell images. Data in Brief 30:105474 (2020).",
    },
    "pathmnist": {
        "classes": [
            "adipose", "background", "debris", "lymphocytes", "mucus", "smooth_muscle",
            "normal_colon_mucosa", "cancer_associated_stroma", "colorectal_adenocarcinoma_epithelium",
        ],  # fmt: skip
        "licence": "CC BY 4.0",
        "source": "Kather JN et al. Predicting survival from colorectal cancer histology slides. PLOS Med 16:e1002730 (2019).",
    },
    "pneumoniamnist": {
        "classes": ["normal", "pneumonia"],
        "licence": "CC BY 4.0",
        "source": "Kermany DS et al. Identifying medical diagnoses and treatable diseases by image-based deep learning. Cell 172:1122 (2018).",
    },
    "octmnist": {
        "classes": ["choroidal_neovascularization", "diabetic_macular_edema", "drusen", "normal"],
        "licence": "CC BY 4.0",
        "source": "Kermany DS et al. Identifying medical diagnoses and treatable diseases by image-based deep learning. Cell 172:1122 (2018).",
    },
    "retinamnist": {
        "classes": ["grade_0", "grade_1", "grade_2", "grade_3", "grade_4"],
        "licence": "CC BY 4.0",
        "source": "DeepDRiD challenge (ISBI 2020), https://isbi.deepdr.org",
    },
    "tissuemnist": {
        "classes": [
            "collecting_duct_connecting_tubule", "distal_convoluted_tubule", "glomerular_endothelial_cells",
            "interstitial_endothelial_cells", "leukocytes", "podocytes", "proximal_tubule_segments",
            "thick_ascending_limb",
        ],  # fmt: skip
        "licence": "CC BY 4.0",
        "source": "Broad Bioimage Benchmark Collection BBBC051.",
    },
    "organamnist": {"classes": _organs(), "licence": "CC BY 4.0", "source": "LiTS (Bilic P et al., Med Image Anal 2023)."},
    "organcmnist": {"classes": _organs(), "licence": "CC BY 4.0", "source": "LiTS (Bilic P et al., Med Image Anal 2023)."},
    "organsmnist": {"classes": _organs(), "licence": "CC BY 4.0", "source": "LiTS (Bilic P et al., Med Image Anal 2023)."},
}


@dataclass(frozen=True)
class DatasetInfo:
    """Where a named dataset lives and how to get it.

    Attributes
    ----------
    filename : str
        File name searched by :func:`find_data_file` (or inside the package for the sample).
    kind : str
        ``"bundled"``, ``"npz"`` (HAM10000-style keys) or ``"medmnist"``.
    fetch : str
        Shell command (run from the checkout) that creates the file.
    description : str
        One line for listings.
    """

    filename: str
    kind: str
    fetch: str
    description: str


#: Dataset names accepted by :func:`load_dataset`.
DATASETS: dict[str, DatasetInfo] = {
    "ham10000-sample": DatasetInfo(
        "ham10000_sample.npz",
        "bundled",
        "python data_scripts/make_ham10000_sample.py",
        "HAM10000 subset bundled in the package: 2,003 images, 32x32, 1,513 whole lesions, 7 classes",
    ),
    "ham10000": DatasetInfo(
        "ham10000_64.npz",
        "npz",
        "python data_scripts/download_ham10000.py --size 64",
        "HAM10000, all 10,015 dermoscopy images at 64x64, 7 diagnoses, lesion ids (paper 01 HAM-10K)",
    ),
    "cifar100": DatasetInfo(
        "cifar100.npz",
        "npz",
        "python data_scripts/download_cifar100.py",
        "CIFAR-100, 60,000 images 32x32, 100 classes in 20 superclasses (paper 02)",
    ),
}
for _name in MEDMNIST_INFO:
    DATASETS[_name] = DatasetInfo(
        f"{_name}.npz",
        "medmnist",
        f"python data_scripts/download_medmnist.py {_name}",
        f"MedMNIST v2 {_name} (28x28)",
    )
del _name


def _valid_names() -> str:
    return ", ".join(repr(n) for n in DATASETS)


def _checkout_data_dir() -> Path:
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


def data_search_dirs(data_dir: str | PathLike | None = None) -> list[Path]:
    """Folders searched for data files, in order.

    Parameters
    ----------
    data_dir : str or PathLike, optional
        If given, only this folder is searched.

    Returns
    -------
    list of pathlib.Path
        ``[data_dir]``, or ``[$HIERVIZ_DATA (if set), <checkout>/../shared/data]``.
    """
    if data_dir is not None:
        return [Path(data_dir).expanduser()]
    env = os.environ.get(ENV_VAR)
    dirs = [Path(env).expanduser()] if env else []
    dirs.append(_checkout_data_dir())
    return dirs


def _fetch_command(filename: str) -> str:
    for info in DATASETS.values():
        if info.filename == filename:
            return info.fetch
    return "see data_scripts/README.md"


def find_data_file(filename: str, data_dir: str | PathLike | None = None) -> Path:
    """Locate a data file: ``data_dir`` if given, else ``$HIERVIZ_DATA``, then ``../shared/data``.

    Parameters
    ----------
    filename : str
        A file name such as ``"ham10000_64.npz"`` (no folders).
    data_dir : str or PathLike, optional
        Search only this folder.

    Returns
    -------
    pathlib.Path
        The first existing ``<folder>/<filename>``.

    Raises
    ------
    FileNotFoundError
        Not found; the message names the file, the folders searched, and the
        ``python data_scripts/...`` command that fetches it.
    TypeError
        ``filename`` is not a string.
    """
    if not isinstance(filename, str) or not filename:
        raise TypeError(f"filename must be a non-empty str, got {filename!r}")
    dirs = data_search_dirs(data_dir)
    for d in dirs:
        p = d / filename
        if p.is_file():
            return p
    where = ", ".join(str(d) for d in dirs)
    raise FileNotFoundError(
        f"data file {filename!r} not found (searched: {where}). Fetch it with `{_fetch_command(filename)}` "
        f"(run from the checkout; it writes to ${ENV_VAR} or ../shared/data), or set {ENV_VAR} to the folder "
        "that holds it."
    )


# ---------------------------------------------------------------------------------------------- dataset
@dataclass(eq=False)
class ArrayDataset:
    """An image classification dataset held in memory as numpy arrays.

    Parameters
    ----------
    images : numpy.ndarray of uint8, shape (N, H, W, 3)
        RGB images, values 0..255.
    labels : numpy.ndarray of int, shape (N,)
        Class index per image, in ``0 .. len(classes) - 1`` (stored as int64).
    classes : list of str
        Class names, label-index order; must be unique.
    groups : numpy.ndarray, shape (N,), optional
        Group id per image (HAM10000 ``lesion_id``, a patient id) for leak-free splits
        (:func:`hierviz.data.grouped_split`); ``None`` if images are independent.
    name, citation, licence : str
        Provenance, shown by ``repr`` and kept by :meth:`subset`.
    official_split : numpy.ndarray of str, shape (N,), optional
        ``"train"`` / ``"val"`` / ``"test"`` per image where the source defines a split
        (MedMNIST, CIFAR-100).
    ids : numpy.ndarray of str, shape (N,), optional
        Per-image identifiers (HAM10000 ``image_id``, file paths of an image folder).

    Raises
    ------
    TypeError
        ``images`` not uint8, labels not integers.
    ValueError
        Wrong shapes or lengths, labels outside ``0..C-1``, repeated class names,
        ``official_split`` values other than train/val/test.

    Examples
    --------
    >>> ds = load_dataset("ham10000-sample")
    >>> ds.images.shape[1:], ds.classes[:2]
    ((32, 32, 3), ['nv', 'mel'])
    """

    images: np.ndarray
    labels: np.ndarray
    classes: list[str]
    groups: np.ndarray | None = None
    name: str = ""
    citation: str = ""
    licence: str = ""
    official_split: np.ndarray | None = None
    ids: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        im = np.asarray(self.images)
        if im.dtype != np.uint8:
            raise TypeError(f"images must be uint8 (0..255), got dtype {im.dtype}")
        if im.ndim != 4 or im.shape[-1] != 3:
            raise ValueError(f"images must have shape (N, H, W, 3), got {im.shape}")
        y = np.asarray(self.labels)
        if y.ndim != 1 or y.shape[0] != im.shape[0]:
            raise ValueError(f"labels must have shape ({im.shape[0]},) to match images, got {y.shape}")
        if y.size and not np.issubdtype(y.dtype, np.integer):
            raise TypeError(f"labels must be integers, got dtype {y.dtype}")
        classes = [str(c) for c in self.classes]
        if len(set(classes)) != len(classes):
            dup = sorted({c for c in classes if classes.count(c) > 1})
            raise ValueError(f"classes must be unique, repeated: {dup}")
        if y.size and (y.min() < 0 or y.max() >= len(classes)):
            raise ValueError(f"labels must be in 0..{len(classes) - 1} (len(classes)={len(classes)}), got {y.min()}..{y.max()}")
        self.images, self.labels, self.classes = im, y.astype(np.int64, copy=False), classes
        for attr in ("groups", "official_split", "ids"):
            v = getattr(self, attr)
            if v is not None:
                v = np.asarray(v)
                if v.shape != (im.shape[0],):
                    raise ValueError(f"{attr} must have shape ({im.shape[0]},), got {v.shape}")
                setattr(self, attr, v)
        if self.official_split is not None:
            bad = sorted(set(np.unique(self.official_split).tolist()) - {"train", "val", "test"})
            if bad:
                raise ValueError(f"official_split values must be 'train'/'val'/'test', got {bad}")

    # -------------------------------------------------------------------- basics
    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, i: int) -> tuple[np.ndarray, int]:
        """``(image (H, W, 3) uint8, label int)`` of sample ``i``."""
        return self.images[i], int(self.labels[i])

    def __repr__(self) -> str:
        h, w = self.image_size
        grp = f", groups={np.unique(self.groups).size}" if self.groups is not None else ""
        return (
            f"ArrayDataset({self.name!r}, N={len(self)}, {h}x{w}, C={self.num_classes}{grp}"
            + (f", licence={self.licence!r}" if self.licence else "")
            + ")"
        )

    @property
    def num_classes(self) -> int:
        """C, the number of classes."""
        return len(self.classes)

    @property
    def image_size(self) -> tuple[int, int]:
        """``(H, W)`` of the images."""
        return int(self.images.shape[1]), int(self.images.shape[2])

    def class_counts(self) -> np.ndarray:
        """Images per class, shape (C,) int64, label-index order."""
        return np.bincount(self.labels, minlength=self.num_classes).astype(np.int64)

    # -------------------------------------------------------------------- derived datasets
    def subset(self, idx: Any) -> "ArrayDataset":
        """The samples ``idx`` (int indices or a boolean mask of length N), same classes.

        Parameters
        ----------
        idx : array-like of int or bool
            Indices into ``0..N-1`` (negative indices are refused) or a mask of length N.

        Returns
        -------
        ArrayDataset
            Copies of the selected rows; ``classes``, ``name``, ``citation``, ``licence`` kept.

        Raises
        ------
        ValueError
            Out-of-range indices, a mask of the wrong length, or a non-1-D index.
        TypeError
            Non-integer, non-boolean indices.
        """
        idx = np.asarray(idx.detach().cpu().numpy() if hasattr(idx, "detach") else idx)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise ValueError(f"idx: boolean mask must have shape ({len(self)},), got {idx.shape}")
            idx = np.flatnonzero(idx)
        elif idx.size == 0:
            idx = idx.astype(np.int64)
        elif not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"idx must hold integers or booleans, got dtype {idx.dtype}")
        if idx.ndim != 1:
            raise ValueError(f"idx must be 1-D, got shape {idx.shape}")
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise ValueError(f"idx must be in 0..{len(self) - 1}, got {idx.min()}..{idx.max()}")

        def take(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[idx]

        return replace(
            self,
            images=self.images[idx],
            labels=self.labels[idx],
            classes=list(self.classes),
            groups=take(self.groups),
            official_split=take(self.official_split),
            ids=take(self.ids),
        )

    def with_classes(self, classes: Sequence[str]) -> "ArrayDataset":
        """The same data with renamed classes (same count, same label indices).

        Parameters
        ----------
        classes : Sequence[str]
            New names, ``len(classes) == self.num_classes``.

        Returns
        -------
        ArrayDataset

        Raises
        ------
        ValueError
            Wrong number of names or repeated names.
        """
        classes = [str(c) for c in classes]
        if len(classes) != self.num_classes:
            raise ValueError(f"classes: expected {self.num_classes} names, got {len(classes)}")
        return replace(self, classes=classes)

    def resized(self, size: int) -> "ArrayDataset":
        """The same data with images resized to ``size x size`` (Pillow bilinear, antialiased).

        Parameters
        ----------
        size : int
            Output side in pixels, >= 1. Non-square images are centre-cropped first.

        Returns
        -------
        ArrayDataset
            ``self`` if the images already have that size.

        Raises
        ------
        ValueError
            ``size`` < 1.
        """
        size = _check_size(size)
        if self.image_size == (size, size):
            return self
        from PIL import Image

        out = np.stack([_square_resize(Image.fromarray(im), size) for im in self.images]) if len(self) else (
            np.zeros((0, size, size, 3), np.uint8)
        )
        return replace(self, images=out)

    def split(self, val: float = 0.15, test: float = 0.15, seed: int = 0, *, official: bool = False) -> dict[str, "ArrayDataset"]:
        """Train / val / test datasets, grouped by :attr:`groups` and stratified.

        Parameters
        ----------
        val, test : float, default 0.15
            Fractions (see :func:`hierviz.data.grouped_split`).
        seed : int, default 0
        official : bool, default False
            Use :attr:`official_split` instead (MedMNIST / CIFAR-100); ``val``, ``test``
            and ``seed`` are then ignored.

        Returns
        -------
        dict[str, ArrayDataset]
            Keys ``"train"``, ``"val"``, ``"test"``.

        Raises
        ------
        ValueError
            ``official=True`` on a dataset without an official split; bad fractions.
        """
        if official:
            if self.official_split is None:
                raise ValueError(f"official=True but dataset {self.name!r} has no official_split")
            return {k: self.subset(self.official_split == k) for k in ("train", "val", "test")}
        from hierviz.data.splits import grouped_split

        idx = grouped_split(self.labels, self.groups, val=val, test=test, seed=seed)
        return {k: self.subset(v) for k, v in idx.items()}


def _check_size(size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"image_size must be an int, got {type(size).__name__}")
    if size < 1:
        raise ValueError(f"image_size must be >= 1, got {size}")
    return int(size)


def _square_resize(img: Any, size: int) -> np.ndarray:
    """Centre-crop a PIL image to a square and resize it (bilinear, antialiased) to uint8 (size, size, 3)."""
    from PIL import Image

    img = img.convert("RGB")
    w, h = img.size
    s = min(w, h)
    if w != h:
        left, top = (w - s) // 2, (h - s) // 2
        img = img.crop((left, top, left + s, top + s))
    if s != size:
        img = img.resize((size, size), Image.BILINEAR)
    return np.asarray(img, dtype=np.uint8)


def _to_rgb(images: np.ndarray, where: str) -> np.ndarray:
    """uint8 (N,H,W) / (N,H,W,1) / (N,H,W,3) -> (N,H,W,3)."""
    if images.dtype != np.uint8:
        raise TypeError(f"{where}: images must be uint8 (0..255), got dtype {images.dtype}")
    if images.ndim == 3:
        return np.repeat(images[..., None], 3, axis=-1)
    if images.ndim == 4 and images.shape[-1] == 1:
        return np.repeat(images, 3, axis=-1)
    if images.ndim == 4 and images.shape[-1] == 3:
        return images
    raise ValueError(f"{where}: images must be (N, H, W), (N, H, W, 1) or (N, H, W, 3), got {images.shape}")


def _medmnist_key(stem: str) -> str:
    """``breastmnist_224`` -> ``breastmnist`` (MedMNIST+ size suffix)."""
    base, _, suffix = stem.lower().rpartition("_")
    return base if base and suffix.isdigit() else stem.lower()


# ---------------------------------------------------------------------------------------------- loaders
def load_medmnist(path: str | PathLike, name: str | None = None) -> ArrayDataset:
    """Load a MedMNIST-format ``.npz`` (2-D, single-label), merging its train/val/test arrays.

    Parameters
    ----------
    path : str or PathLike
        File with keys ``{train,val,test}_images`` (uint8 (n, H, W) grayscale or
        (n, H, W, 3) RGB) and ``{train,val,test}_labels`` ((n, 1) or (n,) ints); ``train``
        is required, ``val`` / ``test`` optional.
    name : str, optional
        MedMNIST flag (``"breastmnist"`` ...) to look up class names in
        :data:`MEDMNIST_INFO`; default: the file stem (a ``_224``-style suffix is ignored).

    Returns
    -------
    ArrayDataset
        Images as (N, H, W, 3) uint8 (grayscale replicated to 3 channels), labels (N,),
        ``official_split`` = ``"train"`` / ``"val"`` / ``"test"`` per image, ``groups=None``.
        Class names from :data:`MEDMNIST_INFO` for known sets, else ``class_0``,
        ``class_1``, ... (name them with a tree JSON ``"leaf_order"`` and :func:`bind_tree`).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Missing ``train_images`` / ``train_labels``, mismatched lengths, multi-label
        labels (e.g. ChestMNIST), negative labels, or more label values than the known
        class list.
    TypeError
        Non-uint8 images or non-integer labels.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    key = _medmnist_key(name or path.stem)
    with np.load(path, allow_pickle=False) as z:
        files = set(z.files)
        if not {"train_images", "train_labels"} <= files:
            raise ValueError(
                f"{path}: not a MedMNIST npz (needs train_images/train_labels; has {sorted(files)})"
            )
        imgs, labs, split = [], [], []
        for s in ("train", "val", "test"):
            if f"{s}_images" not in files:
                continue
            if f"{s}_labels" not in files:
                raise ValueError(f"{path}: has {s}_images but no {s}_labels")
            im, lab = z[f"{s}_images"], z[f"{s}_labels"]
            if lab.ndim == 2 and lab.shape[1] != 1:
                raise ValueError(
                    f"{path}: {s}_labels has shape {lab.shape}: multi-label data is not supported "
                    "(hierviz needs one leaf label per image)"
                )
            lab = lab.reshape(-1)
            if lab.shape[0] != im.shape[0]:
                raise ValueError(f"{path}: {s}_images has {im.shape[0]} images but {s}_labels has {lab.shape[0]} labels")
            if lab.size and not np.issubdtype(lab.dtype, np.integer):
                raise TypeError(f"{path}: {s}_labels must be integers, got dtype {lab.dtype}")
            imgs.append(_to_rgb(im, f"{path}: {s}_images"))
            labs.append(lab.astype(np.int64))
            split.append(np.full(lab.shape[0], s, dtype="<U5"))
    shapes = {im.shape[1:] for im in imgs}
    if len(shapes) != 1:
        raise ValueError(f"{path}: image sizes differ between splits: {sorted(shapes)}")
    labels = np.concatenate(labs)
    if labels.size and labels.min() < 0:
        raise ValueError(f"{path}: negative labels")
    n_cls = int(labels.max()) + 1 if labels.size else 0
    info = MEDMNIST_INFO.get(key)
    if info is not None:
        if n_cls > len(info["classes"]):
            raise ValueError(f"{path}: labels go up to {n_cls - 1} but {key} has {len(info['classes'])} classes")
        classes, licence = list(info["classes"]), info["licence"]
        citation = f"{MEDMNIST_CITATION} Source data: {info['source']}"
    else:
        classes, licence = [f"class_{i}" for i in range(n_cls)], "unknown (see the data's own licence)"
        citation = MEDMNIST_CITATION
    return ArrayDataset(
        images=np.concatenate(imgs),
        labels=labels,
        classes=classes,
        groups=None,
        name=key,
        citation=citation,
        licence=licence,
        official_split=np.concatenate(split),
    )


def _str_meta(z: Any, key: str) -> str:
    if key not in z.files:
        return ""
    v = z[key]
    return str(v.item() if v.ndim == 0 else v[0])


def load_npz(path: str | PathLike, name: str | None = None) -> ArrayDataset:
    """Load an ``.npz`` in either MedMNIST format or the hierviz/HAM10000 format.

    The hierviz format (``ham10000_64.npz``, the bundled sample, ``cifar100.npz``) has
    ``images`` (N, H, W, 3) or (N, H, W) uint8 and ``label`` (or ``labels``) (N,) int,
    and optionally ``classes`` (C,) str, ``lesion_id`` / ``groups`` (N,) (group ids),
    ``image_id`` (N,), ``split`` (N,) train/val/test, ``citation`` and ``licence`` (0-d str).

    Parameters
    ----------
    path : str or PathLike
        The file.
    name : str, optional
        Dataset name; default the file stem.

    Returns
    -------
    ArrayDataset
        Classes default to ``class_0`` ...; a file with the HAM10000 classes and
        ``lesion_id`` gets the HAM10000 citation and CC BY-NC 4.0 licence.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Neither format's keys present (the message lists the keys found), or any check of
        :class:`ArrayDataset`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    with np.load(path, allow_pickle=False) as z:
        files = set(z.files)
        if "train_images" in files:
            return load_medmnist(path, name=name)
        label_key = "label" if "label" in files else "labels" if "labels" in files else None
        if "images" not in files or label_key is None:
            raise ValueError(
                f"{path}: unknown npz layout (keys {sorted(files)}); expected MedMNIST keys "
                "train_images/train_labels/... or hierviz keys images + label"
            )
        images = _to_rgb(z["images"], f"{path}: images")
        labels = z[label_key].reshape(-1)
        if labels.size and not np.issubdtype(labels.dtype, np.integer):
            raise TypeError(f"{path}: {label_key} must be integers, got dtype {labels.dtype}")
        if "classes" in files:
            classes = [str(c) for c in z["classes"].tolist()]
        else:
            classes = [f"class_{i}" for i in range(int(labels.max()) + 1 if labels.size else 0)]
        gkey = next((k for k in ("lesion_id", "groups", "patient_id") if k in files), None)
        groups = z[gkey] if gkey else None
        ids = z["image_id"] if "image_id" in files else None
        split = z["split"].astype("<U5") if "split" in files else None
        citation, licence = _str_meta(z, "citation"), _str_meta(z, "licence")
    is_ham = classes == HAM_CLASSES and gkey == "lesion_id"
    if is_ham:
        citation, licence = citation or HAM_CITATION, licence or HAM_LICENCE
    return ArrayDataset(
        images=images,
        labels=labels,
        classes=classes,
        groups=groups,
        name=name or path.stem,
        citation=citation,
        licence=licence,
        official_split=split,
        ids=ids,
    )


def load_image_folder(path: str | PathLike, image_size: int = 64, *, name: str | None = None) -> ArrayDataset:
    """Load an image folder with one sub-folder per class.

    Parameters
    ----------
    path : str or PathLike
        Folder whose sub-folders (sorted by name; hidden ones skipped) are the classes;
        images anywhere below a class folder belong to it (extensions
        ``.png .jpg .jpeg .bmp .tif .tiff .gif .webp .ppm .pgm``, case-insensitive).
    image_size : int, default 64
        Every image is converted to RGB, centre-cropped to a square and resized to
        ``image_size x image_size`` (Pillow bilinear, antialiased).
    name : str, optional
        Dataset name; default the folder name.

    Returns
    -------
    ArrayDataset
        ``classes`` = sub-folder names, ``groups=None``, ``ids`` = paths relative to ``path``.

    Raises
    ------
    FileNotFoundError
        ``path`` is not a folder.
    ValueError
        No class sub-folders, a class folder without images (named), or an unreadable image
        (named).
    """
    from PIL import Image, UnidentifiedImageError

    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a folder")
    size = _check_size(image_size)
    class_dirs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not class_dirs:
        raise ValueError(f"{root}: no class sub-folders (expected one sub-folder of images per class)")
    images, labels, ids = [], [], []
    for c, d in enumerate(class_dirs):
        files = sorted(
            f for f in d.rglob("*")
            if f.is_file() and f.suffix.lower() in IMAGE_EXTENSIONS and not f.name.startswith(".")
        )  # fmt: skip
        if not files:
            raise ValueError(f"{root}: class folder {d.name!r} holds no images ({', '.join(IMAGE_EXTENSIONS)})")
        for f in files:
            try:
                with Image.open(f) as img:
                    images.append(_square_resize(img, size))
            except (UnidentifiedImageError, OSError) as e:
                raise ValueError(f"{f}: cannot read image ({e})") from None
            labels.append(c)
            ids.append(str(f.relative_to(root)))
    return ArrayDataset(
        images=np.stack(images),
        labels=np.asarray(labels, dtype=np.int64),
        classes=[d.name for d in class_dirs],
        groups=None,
        name=name or root.name,
        citation="",
        licence="",
        ids=np.asarray(ids),
    )


def _load_sample() -> ArrayDataset:
    ref = resources.files("hierviz.data").joinpath("sample", DATASETS["ham10000-sample"].filename)
    if not ref.is_file():
        raise FileNotFoundError(
            f"the bundled sample {DATASETS['ham10000-sample'].filename!r} is missing from the package "
            f"(hierviz/data/sample/); rebuild it with `{DATASETS['ham10000-sample'].fetch}`"
        )
    with resources.as_file(ref) as p:
        ds = load_npz(p, name="ham10000-sample")
    ds.licence = HAM_LICENCE + "; see hierviz/data/sample/NOTICE.md"
    return ds


def load_dataset(
    name_or_path: str | PathLike,
    data_dir: str | PathLike | None = None,
    *,
    image_size: int | None = None,
) -> ArrayDataset:
    """Load a dataset by name, or from a ``.npz`` file or an image folder.

    Parameters
    ----------
    name_or_path : str or PathLike
        A name from :data:`DATASETS` -- ``"ham10000-sample"`` (bundled, always
        available), ``"ham10000"`` (``ham10000_64.npz``), ``"breastmnist"`` and the other
        MedMNIST flags, ``"cifar100"`` -- or a path to a MedMNIST / hierviz ``.npz`` or to an
        image folder with one sub-folder per class.
    data_dir : str or PathLike, optional
        Folder to look in for named datasets instead of ``$HIERVIZ_DATA`` /
        ``../shared/data``.
    image_size : int, optional
        Resize every image to ``image_size x image_size`` (bilinear, antialiased). Image
        folders default to 64.

    Returns
    -------
    ArrayDataset

    Raises
    ------
    FileNotFoundError
        A named dataset's file is missing (the message names it and the
        ``python data_scripts/...`` command that fetches it), or a path that does not exist.
    ValueError
        An unknown name that is not a path (the message lists the valid names), or a file
        whose contents are refused by the loaders.

    Examples
    --------
    >>> ds = load_dataset("ham10000-sample")
    >>> len(ds), ds.num_classes, ds.licence.startswith("CC BY-NC 4.0")
    (2003, 7, True)
    """
    if not isinstance(name_or_path, (str, PathLike)):
        raise TypeError(f"name_or_path must be a dataset name or a path, got {type(name_or_path).__name__}")
    key = name_or_path.lower() if isinstance(name_or_path, str) else None
    if key in DATASETS:
        info = DATASETS[key]
        if info.kind == "bundled":
            ds = _load_sample()
        elif info.kind == "medmnist":
            ds = load_medmnist(find_data_file(info.filename, data_dir), name=key)
        else:
            ds = load_npz(find_data_file(info.filename, data_dir), name=key)
    else:
        p = Path(name_or_path).expanduser()
        if p.is_dir():
            ds = load_image_folder(p, image_size=image_size or 64)
        elif p.is_file():
            ds = load_npz(p)
        elif isinstance(name_or_path, PathLike) or os.sep in str(name_or_path) or p.suffix:
            raise FileNotFoundError(f"{p} does not exist (expected a .npz file or an image folder)")
        else:
            raise ValueError(
                f"name_or_path: unknown dataset {str(name_or_path)!r}; valid names: {_valid_names()}; "
                "or pass a path to a MedMNIST/hierviz .npz file or an image folder (one sub-folder per class)"
            )
    if image_size is not None:
        ds = ds.resized(image_size)
    return ds


def bind_tree(dataset: ArrayDataset, tree: Any) -> tuple[ArrayDataset, "Any"]:
    """Match a dataset and a label tree: leaf index ``i`` becomes class ``i``.

    If the dataset's classes are unnamed (``class_0``, ``class_1``, ... as for an unknown
    MedMNIST file) and the tree has exactly that many leaves, the classes are named after
    the tree's leaf order -- put a ``"leaf_order"`` in the tree JSON listing the names of
    label 0, 1, ... Then :func:`hierviz.data.align_tree` re-orders the tree's leaves to
    the dataset's classes.

    Parameters
    ----------
    dataset : ArrayDataset
    tree : LabelTree, str or PathLike
        A tree, a bundled tree name or a tree JSON path (see :func:`hierviz.data.load_tree`).

    Returns
    -------
    (ArrayDataset, LabelTree)
        The (possibly renamed) dataset and the aligned tree, ``tree.leaves == dataset.classes``.

    Raises
    ------
    ValueError
        Class names and leaves differ (the message names the mismatch).
    TypeError
        ``dataset`` is not an ArrayDataset.
    """
    if not isinstance(dataset, ArrayDataset):
        raise TypeError(f"dataset must be an ArrayDataset, got {type(dataset).__name__}")
    tree = load_tree(tree)
    if is_placeholder_classes(dataset.classes) and len(dataset.classes) == tree.num_leaves:
        dataset = dataset.with_classes(tree.leaves)
    return dataset, align_tree(tree, dataset.classes)
