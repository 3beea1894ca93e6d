"""The MedMNIST v2 ``.npz`` format (2-D, single-label): reader, class names and citations.

:mod:`.medmnist` registers each flag as a dataset; this module registers nothing, so
:mod:`.npz` can read a MedMNIST-format file without registering the flags before the
data sets listed ahead of them. A MedMNIST file holds ``{train,val,test}_images`` (uint8 (n, H, W) grey or (n, H, W, 3)
RGB) and ``{train,val,test}_labels`` ((n, 1) or (n,) ints). :func:`load_medmnist` merges
the three and keeps the official split in ``official_split``. Each flag of
:data:`MEDMNIST_INFO` is registered as a dataset (``load_dataset("breastmnist")`` reads
``breastmnist.npz`` from the data folder; ``python data_scripts/download_medmnist.py FLAG``
fetches it).
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from hierviz.data.base import ArrayDataset
from hierviz.data.loaders._io import HAM_CITATION, check_labels, open_npz, placeholder_classes, to_rgb

__all__ = ["MEDMNIST_CITATION", "MEDMNIST_DEFAULT_TREE", "MEDMNIST_FIX", "MEDMNIST_INFO", "load_medmnist"]

MEDMNIST_CITATION = (
    "Yang J, Shi R, Wei D, Liu Z, Zhao L, Ke B, Pfister H, Ni B. MedMNIST v2 - A large-scale lightweight "
    "benchmark for 2D and 3D biomedical image classification. Sci Data 10:41 (2023). "
    "doi:10.1038/s41597-022-01721-8."
)

#: The fix named by MedMNIST-format refusals.
MEDMNIST_FIX = (
    "re-download it with `python data_scripts/download_medmnist.py FLAG`, or re-create it with "
    "numpy.savez_compressed(path, train_images=uint8 (n, H, W[, 3]), train_labels=int (n, 1), ...)"
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
            "basophil",
            "eosinophil",
            "erythroblast",
            "immature_granulocyte",
            "lymphocyte",
            "monocyte",
            "neutrophil",
            "platelet",
        ],  # fmt: skip
        "licence": "CC BY 4.0",
        "source": "Acevedo A et al. A dataset of microscopic peripheral blood cell images. Data in Brief 30:105474 (2020).",
    },
    "pathmnist": {
        "classes": [
            "adipose",
            "background",
            "debris",
            "lymphocytes",
            "mucus",
            "smooth_muscle",
            "normal_colon_mucosa",
            "cancer_associated_stroma",
            "colorectal_adenocarcinoma_epithelium",
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
            "collecting_duct_connecting_tubule",
            "distal_convoluted_tubule",
            "glomerular_endothelial_cells",
            "interstitial_endothelial_cells",
            "leukocytes",
            "podocytes",
            "proximal_tubule_segments",
            "thick_ascending_limb",
        ],  # fmt: skip
        "licence": "CC BY 4.0",
        "source": "Broad Bioimage Benchmark Collection BBBC051.",
    },
    "organamnist": {
        "classes": _organs(),
        "licence": "CC BY 4.0",
        "source": "LiTS (Bilic P et al., Med Image Anal 2023).",
    },
    "organcmnist": {
        "classes": _organs(),
        "licence": "CC BY 4.0",
        "source": "LiTS (Bilic P et al., Med Image Anal 2023).",
    },
    "organsmnist": {
        "classes": _organs(),
        "licence": "CC BY 4.0",
        "source": "LiTS (Bilic P et al., Med Image Anal 2023).",
    },
}

#: Bundled trees used by default for the MedMNIST flags that have one.
MEDMNIST_DEFAULT_TREE = {"dermamnist": "two-step", "breastmnist": "breastmnist", "bloodmnist": "bloodmnist"}


def _medmnist_key(stem: str) -> str:
    """``breastmnist_224`` -> ``breastmnist`` (MedMNIST+ size suffix)."""
    base, _, suffix = stem.lower().rpartition("_")
    return base if base and suffix.isdigit() else stem.lower()


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
        ``class_1``, ... (bind a tree whose leaves are the label values ``"0"``, ``"1"``, ...
        or that has a ``"leaf_order"``, with :func:`hierviz.data.bind_tree`).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        One line naming the file and the fix: an unreadable or corrupt file, missing
        ``train_images`` / ``train_labels``, non-uint8 images, non-integer, negative or
        multi-label labels (e.g. ChestMNIST), mismatched lengths, image sizes differing
        between splits, or more label values than the known class list.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "breastmnist.npz")
    >>> np.savez_compressed(p, train_images=np.zeros((4, 28, 28), np.uint8), train_labels=np.array([[0], [1], [1], [0]]))
    >>> ds = load_medmnist(p)
    >>> ds.classes, ds.images.shape, ds.official_split.tolist()
    (['malignant', 'normal_benign'], (4, 28, 28, 3), ['train', 'train', 'train', 'train'])
    """
    path = Path(path)
    key = _medmnist_key(name or path.stem)
    with open_npz(path) as z:
        files = set(z.files)
        if not {"train_images", "train_labels"} <= files:
            raise ValueError(
                f"{path}: not a MedMNIST npz (needs train_images/train_labels; has {sorted(files)}); {MEDMNIST_FIX}"
            )
        imgs, labs, split = [], [], []
        for s in ("train", "val", "test"):
            if f"{s}_images" not in files:
                continue
            if f"{s}_labels" not in files:
                raise ValueError(f"{path}: has {s}_images but no {s}_labels; {MEDMNIST_FIX}")
            im, lab = z[f"{s}_images"], z[f"{s}_labels"]
            n_im = im.shape[0] if im.ndim else 0
            lab = check_labels(lab, n_im, f"{path}: {s}_labels", MEDMNIST_FIX)
            imgs.append(to_rgb(im, f"{path}: {s}_images", MEDMNIST_FIX))
            labs.append(lab.astype(np.int64))
            split.append(np.full(lab.shape[0], s, dtype="<U5"))
    shapes = {im.shape[1:] for im in imgs}
    if len(shapes) != 1:
        raise ValueError(f"{path}: image sizes differ between splits: {sorted(shapes)}; {MEDMNIST_FIX}")
    labels = np.concatenate(labs)
    if labels.size == 0:
        raise ValueError(f"{path}: holds no images; {MEDMNIST_FIX}")
    n_cls = int(labels.max()) + 1
    info = MEDMNIST_INFO.get(key)
    if info is not None:
        if n_cls > len(info["classes"]):
            raise ValueError(
                f"{path}: labels go up to {n_cls - 1} but {key} has {len(info['classes'])} classes; "
                f"the file is not {key}: rename it, or pass name= the right MedMNIST flag"
            )
        classes, licence = list(info["classes"]), info["licence"]
        citation = f"{MEDMNIST_CITATION} Source data: {info['source']}"
    else:
        classes = placeholder_classes(labels, f"{path}: labels", MEDMNIST_FIX)
        licence = "unknown (see the data's own licence)"
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
        names_inferred=info is not None,  # MedMNIST files carry no names: these come from the file name
    )
