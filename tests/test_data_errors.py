"""Bad data files fail with one line naming the file and the fix, never a raw traceback."""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hierviz.data import bind_tree, load_dataset, load_image_folder, load_medmnist, load_npz

FIX = r"re-create it with numpy\.savez_compressed\(path, images=.*labels="


def _good(path: Path, **extra) -> Path:
    rng = np.random.default_rng(0)
    arrays = {"images": rng.integers(0, 256, (40, 8, 8, 3), dtype=np.uint8), "labels": np.arange(40) % 3}
    arrays.update(extra)
    np.savez_compressed(path, **{k: v for k, v in arrays.items() if v is not None})
    return path


def _one_line(e: pytest.ExceptionInfo, *needles: str) -> str:
    msg = str(e.value)
    assert "\n" not in msg
    for n in needles:
        assert n in msg, (n, msg)
    return msg


# ----------------------------------------------------------------------------------- unreadable .npz
def test_random_bytes(tmp_path):
    p = tmp_path / "random.npz"
    p.write_bytes(np.random.default_rng(0).integers(0, 256, 1000, dtype=np.uint8).tobytes())
    for load in (load_npz, load_dataset, load_medmnist):
        with pytest.raises(ValueError, match=rf"could not read {p}: not an \.npz archive .*; {FIX}") as e:
            load(p)
        _one_line(e)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.npz"
    p.write_bytes(b"")
    with pytest.raises(ValueError, match=rf"could not read .*empty\.npz: the file is empty; {FIX}"):
        load_dataset(p)


def test_truncated_zip(tmp_path):
    p = _good(tmp_path / "trunc.npz")
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with pytest.raises(
        ValueError, match=rf"could not read .*trunc\.npz: not an \.npz archive \(BadZipFile: .*\); {FIX}"
    ):
        load_dataset(p)


def test_zip_with_a_corrupt_member(tmp_path):
    p = _good(tmp_path / "crc.npz")
    data = bytearray(p.read_bytes())
    for k in range(200, 260):  # inside the compressed 'images' member
        data[k] ^= 0x55
    p.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"could not read .*crc\.npz: array 'images' is corrupt \(.*\); {FIX}") as e:
        load_dataset(p)
    _one_line(e)


def test_corrupt_member_in_a_medmnist_file(tmp_path):
    p = tmp_path / "breastmnist.npz"
    np.savez(p, train_images=np.arange(6 * 28 * 28, dtype=np.int64).astype(np.uint8).reshape(6, 28, 28),
             train_labels=np.zeros((6, 1), np.uint8))  # fmt: skip
    data = bytearray(p.read_bytes())
    data[1000] ^= 0xFF  # uncompressed member: the CRC check catches it
    p.write_bytes(bytes(data))
    with pytest.raises(
        ValueError, match=r"could not read .*breastmnist\.npz: array 'train_images' is corrupt .*Bad CRC"
    ):
        load_dataset(p)


def test_pickle_only_object_array(tmp_path):
    p = tmp_path / "obj.npz"
    np.savez(p, images=np.zeros((2, 4, 4, 3), np.uint8), labels=np.array([0, 1]), classes=np.array(["a", None], object))
    with pytest.raises(ValueError, match=r"could not read .*obj\.npz: array 'classes' holds Python objects .*pickled.*"
                       r"never loads; re-create it .*dtype=str") as e:  # fmt: skip
        load_dataset(p)
    _one_line(e)
    pk = tmp_path / "pickled.npz"
    pk.write_bytes(pickle.dumps({"images": [1, 2]}))
    with pytest.raises(ValueError, match=r"could not read .*pickled\.npz: not an \.npz archive \(it holds pickled"):
        load_dataset(pk)


def test_single_npy_array_and_non_array_member(tmp_path):
    p = tmp_path / "arr.npz"
    with p.open("wb") as f:
        np.save(f, np.zeros((3, 4)))
    with pytest.raises(
        ValueError, match=rf"could not read .*arr\.npz: a single \.npy array of shape \(3, 4\).*; {FIX}"
    ):
        load_dataset(p)
    z = tmp_path / "text.npz"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("images.npy", b"hello")
        zf.writestr("labels.npy", b"world")
    with pytest.raises(ValueError, match=r"could not read .*text\.npz: (member|array) 'images' "):
        load_dataset(z)


# ----------------------------------------------------------------------------------- malformed contents
@pytest.mark.parametrize(
    "arrays,match",
    [
        ({"pictures": np.zeros((2, 4, 4, 3), np.uint8), "labels": np.zeros(2, int)},
         r"unknown npz layout \(keys \['labels', 'pictures'\]\): no 'images' array; .*numpy\.savez_compressed"),
        ({"images": np.zeros((2, 4, 4, 3), np.uint8)}, r"no 'labels' array; .*numpy\.savez_compressed"),
        ({"images": np.zeros((2, 4, 4, 3), np.float32), "labels": np.zeros(2, int)},
         r"images: images must be uint8 \(0\.\.255\), got dtype float32; convert with .*astype\(numpy\.uint8\)"),
        ({"images": np.zeros((2, 4, 4, 2), np.uint8), "labels": np.zeros(2, int)},
         r"images must be \(N, H, W\), \(N, H, W, 1\) or \(N, H, W, 3\), got \(2, 4, 4, 2\); re-create"),
        ({"images": np.zeros((2, 4, 4, 3), np.uint8), "labels": np.array([0.5, 1.0])},
         r"labels must be integers, got dtype float64; re-create"),
        ({"images": np.zeros((2, 4, 4, 3), np.uint8), "labels": np.zeros((2, 3), int)},
         r"labels has shape \(2, 3\): multi-label data is not supported"),
        ({"images": np.zeros((3, 4, 4, 3), np.uint8), "labels": np.zeros(2, int)}, r"labels: 2 labels for 3 images"),
        ({"images": np.zeros((2, 4, 4, 3), np.uint8), "labels": np.array([0, -1])}, r"labels: negative label -1"),
        ({"images": np.zeros((2, 4, 4, 3), np.uint8), "labels": np.array([0, 5]), "classes": np.array(["a", "b"])},
         r"labels go up to 5 but classes names only 2 \(labels must be in 0\.\.1\); fix the labels or list every class"),
        ({"images": np.zeros((3, 4, 4, 3), np.uint8), "labels": np.zeros(3, int), "groups": np.array([1, 2])},
         r"groups has shape \(2,\) but there are 3 images; give one group id per image"),
        ({"images": np.zeros((0, 4, 4, 3), np.uint8), "labels": np.zeros(0, int)}, r"holds no images"),
        ({"images": np.zeros((2, 4, 4, 3), np.uint8), "labels": np.zeros(2, int), "classes": np.array([["a"]])},
         r"classes must be a 1-D array of names"),
        ({"images": np.zeros((2, 4, 4, 3), np.uint8), "labels": np.zeros(2, int), "split": np.array(["train", "dev"])},
         r"official_split values must be 'train'/'val'/'test', got \['dev'\]; fix the arrays and re-create"),
    ],
)  # fmt: skip
def test_malformed_npz_names_file_and_fix(tmp_path, arrays, match):
    p = tmp_path / "bad.npz"
    np.savez(p, **arrays)
    with pytest.raises(ValueError, match=match) as e:
        load_dataset(p)
    _one_line(e, str(p))


def test_malformed_medmnist_names_file_and_fix(tmp_path):
    p = tmp_path / "x.npz"
    np.savez(p, train_images=np.zeros((2, 4, 4), np.uint8), train_labels=np.zeros((3, 1), np.uint8))
    with pytest.raises(
        ValueError, match=r"x\.npz: train_labels: 3 labels for 2 images; re-download it .*download_medmnist"
    ):
        load_dataset(p)
    np.savez(p, train_images=np.zeros((2, 4, 4), np.uint8), train_labels=np.zeros((2, 1), np.uint8),
             test_images=np.zeros((1, 5, 5), np.uint8), test_labels=np.zeros((1, 1), np.uint8))  # fmt: skip
    with pytest.raises(ValueError, match=r"x\.npz: image sizes differ between splits"):
        load_dataset(p)
    np.savez(p, train_images=np.zeros((2, 4, 4), np.uint8), train_labels=np.zeros((2, 1), np.uint8),
             val_images=np.zeros((1, 4, 4), np.uint8))  # fmt: skip
    with pytest.raises(ValueError, match=r"x\.npz: has val_images but no val_labels"):
        load_dataset(p)
    np.savez(p, train_images=np.zeros((2, 4, 4), np.uint8), train_labels=np.array([[0], [7]]))
    with pytest.raises(
        ValueError, match=r"labels go up to 7 but breastmnist has 2 classes; the file is not breastmnist"
    ):
        load_medmnist(p, name="breastmnist")
    np.savez(p, images=np.zeros((2, 4, 4), np.uint8))
    with pytest.raises(ValueError, match=r"x\.npz: not a MedMNIST npz .*has \['images'\]"):
        load_medmnist(p)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.npz does not exist"):
        load_npz(tmp_path / "nope.npz")
    with pytest.raises(FileNotFoundError, match=r"nope\.npz does not exist"):
        load_medmnist(tmp_path / "nope.npz")


# ----------------------------------------------------------------------------------- image folders
def test_image_folder_without_class_folders_or_images(tmp_path):
    root = tmp_path / "flat"
    root.mkdir()
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(root / "a.png")
    with pytest.raises(
        ValueError, match=r"flat: no class sub-folders .*; found 1 images directly in it; put the images"
    ):
        load_dataset(root)
    (root / "cat").mkdir()
    (root / "dog").mkdir()
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(root / "cat" / "1.png")
    (root / "dog" / "readme.txt").write_text("no images here")
    with pytest.raises(ValueError, match=r"class folder 'dog' holds no images .*add images to it or remove the folder"):
        load_dataset(root)


def test_image_folder_names_the_first_unreadable_file(tmp_path):
    root = tmp_path / "imgs"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    Image.fromarray(np.zeros((6, 6, 3), np.uint8)).save(root / "a" / "0_ok.png")
    (root / "a" / "1_fake.jpg").write_bytes(b"not a jpeg")
    (root / "b" / "2_fake.png").write_bytes(b"also not a png")
    with pytest.raises(ValueError, match=r"a/1_fake\.jpg: cannot read image \(.*\); delete or re-save this file") as e:
        load_dataset(root)
    assert "2_fake" not in _one_line(e)
    (root / "a" / "1_fake.jpg").unlink()
    good = root / "b" / "2_fake.png"
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(good)
    good.write_bytes(good.read_bytes()[:40])  # a truncated PNG: the header reads, the pixels do not
    with pytest.raises(ValueError, match=r"b/2_fake\.png: cannot read image"):
        load_image_folder(root)


# ----------------------------------------------------------------------------------- tree / data mismatch
def test_tree_data_mismatch_names_both_sides_and_the_hint(tmp_path):
    p = _good(tmp_path / "unnamed.npz")
    ds = load_dataset(p)
    with pytest.raises(ValueError) as e:
        bind_tree(ds, "two-step")
    _one_line(e, "does not match the dataset's 3 classes", "class_0", "'nv'", "leaf_order", '"0", "1"', "bind_tree")
    named = load_dataset("ham10000-sample")
    with pytest.raises(ValueError) as e:
        bind_tree(named, "breastmnist")
    _one_line(e, "tree 'breastmnist'", "'nv'", "'malignant'")
