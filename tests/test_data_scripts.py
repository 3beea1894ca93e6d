"""Tests for data_scripts/: download / verify / unpack logic, sample maker, converters.

No network: downloads use file:// URLs or a fake opener; all files are made in tmp_path.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import pickle
import sys
import tarfile
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hierviz.data import DATASETS, MEDMNIST_INFO, bind_tree, load_dataset

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "data_scripts"


def _load(name: str):
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(f"hv_scripts_{name}", SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def common():
    return _load("_common")


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def md5(b: bytes) -> str:
    return hashlib.md5(b).hexdigest()


class FakeResp:
    """A urlopen-like response: read(n), status, headers, context manager; may break mid-way."""

    def __init__(self, data: bytes, status: int = 200, break_after: int | None = None):
        self.buf, self.status = io.BytesIO(data), status
        self.headers = {"Content-Length": str(len(data))}
        self.break_after = break_after

    def read(self, n: int = -1) -> bytes:
        if self.break_after is not None and self.buf.tell() >= self.break_after:
            raise ConnectionResetError("peer reset")
        if self.break_after is not None and n > 0:
            n = min(n, self.break_after - self.buf.tell())
        return self.buf.read(n)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class FakeServer:
    """Serves bytes by URL; honours Range (206) if ``ranges``; records the requests."""

    def __init__(self, files: dict[str, bytes], ranges: bool = True):
        self.files, self.ranges, self.requests = files, ranges, []
        self.break_once: dict[str, int] = {}

    def __call__(self, req, timeout=None):
        url = req.full_url
        rng = req.get_header("Range")
        self.requests.append((url, rng))
        if url not in self.files:
            raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
        data = self.files[url]
        if url in self.break_once:
            return FakeResp(data, 200, break_after=self.break_once.pop(url))
        if rng and self.ranges:
            start = int(rng.split("=")[1].rstrip("-"))
            if start >= len(data):
                raise urllib.error.HTTPError(url, 416, "Range Not Satisfiable", {}, None)
            return FakeResp(data[start:], 206)
        return FakeResp(data, 200)


PAYLOAD = bytes(range(256)) * 50  # 12,800 bytes


# ----------------------------------------------------------------------------------- _common
def test_digest_and_verify(common, tmp_path):
    f = tmp_path / "f.bin"
    f.write_bytes(PAYLOAD)
    assert common.file_digest(f) == sha(PAYLOAD) and common.file_digest(f, "md5") == md5(PAYLOAD)
    common.verify_file(f, sha256=sha(PAYLOAD), md5=md5(PAYLOAD))
    with pytest.raises(common.ChecksumError, match=f"sha256 mismatch: expected {'0' * 64}, got {sha(PAYLOAD)}"):
        common.verify_file(f, sha256="0" * 64)
    with pytest.raises(ValueError, match="no checksum"):
        common.verify_file(f)
    with pytest.raises(ValueError, match="md5: expected a 32-character hex digest"):
        common.verify_file(f, md5="xyz")
    with pytest.raises(ValueError, match="unknown hash"):
        common.file_digest(f, "nohash")


def test_download_file_url_and_skip_existing(common, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(PAYLOAD)
    dest = tmp_path / "out" / "f.bin"
    p = common.download(src.as_uri(), dest, sha256=sha(PAYLOAD), progress=False)
    assert p == dest and dest.read_bytes() == PAYLOAD and not (tmp_path / "out" / "f.bin.part").exists()

    def no_network(req, timeout=None):
        raise AssertionError("must not fetch a file that is already verified")

    assert (
        common.download("https://example.invalid/f", dest, sha256=sha(PAYLOAD), opener=no_network, progress=False)
        == dest
    )
    dest.write_bytes(b"corrupt")  # a bad existing file is fetched again
    common.download(src.as_uri(), dest, md5=md5(PAYLOAD), progress=False)
    assert dest.read_bytes() == PAYLOAD


def test_download_refuses_unverified_and_bad_checksum(common, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(PAYLOAD)
    dest = tmp_path / "f.bin"
    with pytest.raises(ValueError, match="unverified downloads are refused"):
        common.download(src.as_uri(), dest, progress=False)
    with pytest.raises(common.ChecksumError, match="corrupt or not the expected version"):
        common.download(src.as_uri(), dest, sha256="1" * 64, progress=False)
    assert not dest.exists() and not (tmp_path / "f.bin.part").exists()


def test_download_resumes_partial_file(common, tmp_path):
    url = "https://host/data.bin"
    server = FakeServer({url: PAYLOAD})
    dest = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD[:5000])
    common.download(url, dest, sha256=sha(PAYLOAD), opener=server, progress=False)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests == [(url, "bytes=5000-")]


def test_download_restarts_when_server_ignores_range(common, tmp_path):
    url = "https://host/data.bin"
    server = FakeServer({url: PAYLOAD}, ranges=False)
    dest = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(b"junk" * 100)
    common.download(url, dest, sha256=sha(PAYLOAD), opener=server, progress=False)
    assert dest.read_bytes() == PAYLOAD


def test_download_bad_resume_retries_from_scratch(common, tmp_path):
    url = "https://host/data.bin"
    server = FakeServer({url: PAYLOAD})
    dest = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(b"X" * 3000)  # wrong prefix: resumed file fails the check
    common.download(url, dest, sha256=sha(PAYLOAD), opener=server, progress=False)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests == [(url, "bytes=3000-"), (url, None)]


def test_download_complete_part_file_416(common, tmp_path):
    url = "https://host/data.bin"
    server = FakeServer({url: PAYLOAD})
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD)
    common.download(url, tmp_path / "data.bin", sha256=sha(PAYLOAD), opener=server, progress=False)
    assert (tmp_path / "data.bin").read_bytes() == PAYLOAD


def test_download_broken_connection_keeps_part_then_resumes(common, tmp_path):
    url = "https://host/data.bin"
    server = FakeServer({url: PAYLOAD})
    server.break_once[url] = 4096
    dest = tmp_path / "data.bin"
    with pytest.raises(common.DownloadError, match="broke after 4096 bytes.*run the script again to resume"):
        common.download(url, dest, sha256=sha(PAYLOAD), opener=server, progress=False, chunk_size=1024)
    assert (tmp_path / "data.bin.part").stat().st_size == 4096 and not dest.exists()
    common.download(url, dest, sha256=sha(PAYLOAD), opener=server, progress=False)
    assert dest.read_bytes() == PAYLOAD and server.requests[-1] == (url, "bytes=4096-")


def test_download_errors_name_the_url(common, tmp_path):
    server = FakeServer({})
    with pytest.raises(common.DownloadError, match=r"could not download https://host/missing: HTTP 404.*save it as"):
        common.download("https://host/missing", tmp_path / "m", md5="0" * 32, opener=server, progress=False)
    missing = (tmp_path / "nothing_here.bin").as_uri()
    with pytest.raises(common.DownloadError, match="could not reach file://"):
        common.download(missing, tmp_path / "n", md5="0" * 32, progress=False)


def test_extract_zip_tar_and_traversal(common, tmp_path):
    z = tmp_path / "a.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("top/x.txt", "hello")
        zf.writestr("top/sub/y.txt", "world")
    files = common.extract(z, tmp_path / "zx")
    assert sorted(p.name for p in files) == ["x.txt", "y.txt"]
    assert (tmp_path / "zx" / "top" / "sub" / "y.txt").read_text() == "world"
    t = tmp_path / "a.tar.gz"
    with tarfile.open(t, "w:gz") as tf:
        info = tarfile.TarInfo("d/f.bin")
        info.size = len(PAYLOAD)
        tf.addfile(info, io.BytesIO(PAYLOAD))
    assert common.extract(t, tmp_path / "tx") == [(tmp_path / "tx").resolve() / "d" / "f.bin"]
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("ok.txt", "fine")
        zf.writestr("../escape.txt", "bad")
    with pytest.raises(ValueError, match="outside"):
        common.extract(evil, tmp_path / "ex")
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "ex" / "ok.txt").exists()
    (tmp_path / "plain.txt").write_text("x")
    with pytest.raises(ValueError, match="neither a zip nor a tar"):
        common.extract(tmp_path / "plain.txt", tmp_path / "px")


def test_save_npz_is_byte_reproducible(common, tmp_path):
    arrays = {"images": np.arange(600, dtype=np.uint8).reshape(2, 10, 10, 3), "names": np.array(["a", "bb"])}
    a = common.save_npz(tmp_path / "a.npz", arrays)
    b = common.save_npz(tmp_path / "b.npz", arrays)
    assert a.read_bytes() == b.read_bytes()
    with np.load(a) as z:
        assert z.files == ["images", "names"]
        np.testing.assert_array_equal(z["images"], arrays["images"])
        assert z["names"].tolist() == ["a", "bb"]
    with pytest.raises(ValueError, match="dtype object"):
        common.save_npz(tmp_path / "c.npz", {"x": np.array([{}, 1], dtype=object)})


def test_default_out_dir(common, monkeypatch, tmp_path):
    monkeypatch.setenv("HIERVIZ_DATA", str(tmp_path))
    assert common.default_out_dir() == tmp_path
    monkeypatch.delenv("HIERVIZ_DATA")
    assert common.default_out_dir() == REPO.parent / "shared" / "data"


# ----------------------------------------------------------------------------------- make_ham10000_sample
@pytest.fixture(scope="module")
def mk():
    return _load("make_ham10000_sample")


def test_class_quotas_hand_cases(mk):
    ham = np.array([6705, 1113, 1099, 514, 327, 142, 115])
    assert mk.class_quotas(ham, 2000, 100).tolist() == [1203, 200, 197, 100, 100, 100, 100]
    assert mk.class_quotas(ham, 10015, 100).tolist() == ham.tolist()
    assert mk.class_quotas(np.array([90, 30]), 50, 20).tolist() == [30, 20]  # 37.5/12.5 -> floor 20 -> 30/20
    assert mk.class_quotas(np.array([90, 10]), 50, 20).tolist() == [40, 10]  # floor capped at the 10 available
    with pytest.raises(ValueError, match="n must be in 1..100"):
        mk.class_quotas(np.array([90, 10]), 101, 1)


def test_select_lesions_whole_groups(mk):
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    groups = np.array(["a", "a", "b", "c", "d", "d", "d", "e"])
    idx = mk.select_lesions(labels, groups, np.array([2, 1]), seed=0)
    chosen = set(groups[idx])
    for g in chosen:  # every chosen lesion comes with all its images
        assert set(np.flatnonzero(groups == g)) <= set(idx.tolist())
    assert (labels[idx] == 0).sum() >= 2 and (labels[idx] == 1).sum() >= 1
    with pytest.raises(ValueError, match="different labels"):
        mk.select_lesions(np.array([0, 1]), np.array(["a", "a"]), np.array([1, 1]), 0)


def test_downsample_block_mean_round_half_up(mk):
    im = np.array([[0, 1], [2, 3]], np.uint8)[None, :, :, None].repeat(3, -1)  # mean 1.5 -> 2
    assert mk.downsample(im, 1)[0, 0, 0].tolist() == [2, 2, 2]
    im2 = np.array([[0, 0], [1, 2]], np.uint8)[None, :, :, None].repeat(3, -1)  # mean 0.75 -> 1
    assert mk.downsample(im2, 1)[0, 0, 0, 0] == 1
    assert mk.downsample(np.zeros((1, 6, 6, 3), np.uint8), 4).shape == (1, 4, 4, 3)  # bilinear path
    with pytest.raises(ValueError, match="square"):
        mk.downsample(np.zeros((1, 4, 6, 3), np.uint8), 2)


def _fake_ham(path: Path, n_per_class: int = 12) -> Path:
    rng = np.random.default_rng(1)
    classes = np.array(["nv", "mel", "bkl", "bcc", "akiec", "vasc", "df"])
    label = np.repeat(np.arange(7), n_per_class)
    lesion = np.array([f"HAM_{c}_{i // 2}" for c, i in zip(label, np.tile(np.arange(n_per_class), 7))])
    np.savez_compressed(
        path,
        images=rng.integers(0, 256, (label.size, 8, 8, 3), dtype=np.uint8),
        label=label.astype(np.int64),
        dx=classes[label],
        classes=classes,
        lesion_id=lesion,
        image_id=np.array([f"ISIC_{i:07d}" for i in range(label.size)]),
    )
    return path


def test_make_sample_end_to_end(mk, tmp_path):
    src = _fake_ham(tmp_path / "ham.npz")
    s = mk.make_sample(src, tmp_path / "out", n=28, size=4, min_per_class=4, seed=0)
    with np.load(s["path"]) as z:
        assert z.files == list(mk.KEYS)
        assert z["images"].shape[1:] == (4, 4, 3)
        assert np.bincount(z["label"], minlength=7).min() >= 4
        with np.load(src) as full:
            for les in np.unique(z["lesion_id"]):  # whole lesions
                assert (full["lesion_id"] == les).sum() == (z["lesion_id"] == les).sum()
    notice = (tmp_path / "out" / "NOTICE.md").read_text()
    assert "CC BY-NC 4.0" in notice and "10.1038/sdata.2018.161" in notice and s["sha256"] in notice
    again = mk.make_sample(src, tmp_path / "out2", n=28, size=4, min_per_class=4, seed=0)
    assert again["sha256"] == s["sha256"]  # byte-reproducible
    with pytest.raises(ValueError, match="max_bytes"):
        mk.make_sample(src, tmp_path / "out3", n=28, size=4, min_per_class=4, max_bytes=100)
    assert not (tmp_path / "out3" / mk.OUT_NAME).exists()
    assert (
        mk.main(["--src", str(src), "--out", str(tmp_path / "cli"), "--n", "21", "--size", "4", "--min-per-class", "3"])
        == 0
    )
    assert mk.main(["--src", str(tmp_path / "missing.npz"), "--out", str(tmp_path / "cli2")]) == 1


# ----------------------------------------------------------------------------------- download_medmnist
@pytest.fixture(scope="module")
def medm():
    return _load("download_medmnist")


def _tiny_medmnist_bytes(sizes=(3, 1, 2)) -> bytes:
    buf = io.BytesIO()
    arrays = {}
    for s, n in zip(("train", "val", "test"), sizes):
        arrays[f"{s}_images"] = np.zeros((n, 4, 4), np.uint8)
        arrays[f"{s}_labels"] = np.zeros((n, 1), np.uint8)
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_medmnist_fetch_with_fake_record(medm, monkeypatch, tmp_path):
    data = _tiny_medmnist_bytes()
    src = tmp_path / "srv" / "breastmnist.npz"
    src.parent.mkdir()
    src.write_bytes(data)
    monkeypatch.setattr(medm, "RECORD", (tmp_path / "srv").as_uri() + "/{flag}.npz")
    monkeypatch.setitem(medm.FILES, "breastmnist", (md5(data), sha(data), (3, 1, 2)))
    p = medm.fetch("breastmnist", tmp_path / "out", progress=False)
    assert p.read_bytes() == data
    assert len(load_dataset(p)) == 6
    monkeypatch.setitem(medm.FILES, "breastmnist", (md5(data), None, (3, 1, 3)))
    with pytest.raises(ValueError, match="test_images has 2 rows, the official split has 3"):
        medm.fetch("breastmnist", tmp_path / "out", progress=False)
    with pytest.raises(ValueError, match="unknown MedMNIST flag 'chestmnist'"):
        medm.fetch("chestmnist", tmp_path)


def test_medmnist_cli(medm, tmp_path, capsys):
    assert medm.main(["--list"]) == 0
    assert "breastmnist" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        medm.main(["nosuchmnist", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        medm.main(["--out", str(tmp_path)])
    server = FakeServer({})
    assert medm.main(["breastmnist", "--out", str(tmp_path), "--quiet"], opener=server) == 1
    assert server.requests[0][0] == "https://zenodo.org/record/6496656/files/breastmnist.npz?download=1"


def test_medmnist_table_matches_loader_info(medm):
    assert set(medm.FILES) == set(MEDMNIST_INFO)
    for flag in medm.FILES:
        assert DATASETS[flag].fetch == f"python data_scripts/download_medmnist.py {flag}"


@pytest.mark.shared_data
def test_medmnist_pinned_checksums_match_real_breastmnist(medm, data_dir, tmp_path, monkeypatch):
    """The pinned md5 (MedMNIST INFO) and sha256 verify the real file, served over file://."""
    monkeypatch.setattr(medm, "RECORD", data_dir.as_uri() + "/{flag}.npz")
    p = medm.fetch("breastmnist", tmp_path, progress=False)
    assert p.stat().st_size == 559_580


# ----------------------------------------------------------------------------------- download_cifar100
@pytest.fixture(scope="module")
def cifar():
    return _load("download_cifar100")


def _fake_cifar_tar(tmp_path: Path, tree_json: Path, swap: bool = False) -> Path:
    obj = json.loads(tree_json.read_text())
    (root,) = obj["tree"].values()
    coarse_names = list(root)
    fine_names = obj["leaf_order"]
    parent = {f: coarse_names.index(c) for c, fs in root.items() for f in fs}
    if swap:
        parent["apple"], parent["bear"] = parent["bear"], parent["apple"]

    def part(fines):
        n = len(fines)
        data = np.zeros((n, 3072), np.uint8)
        data[:, :1024], data[:, 1024:2048], data[:, 2048:] = 10, 20, 30  # R, G, B planes
        return {"data": data, "fine_labels": list(fines), "coarse_labels": [parent[fine_names[f]] for f in fines]}

    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    blobs = {
        "train": part(list(range(100)) * 2),
        "test": part(list(range(100))),
        "meta": {"fine_label_names": fine_names, "coarse_label_names": coarse_names},
    }
    for name, obj_ in blobs.items():
        (folder / name).write_bytes(pickle.dumps(obj_))
    tar = tmp_path / "cifar-100-python.tar.gz"
    with tarfile.open(tar, "w:gz") as tf:
        tf.add(folder, arcname="cifar-100-python")
    return tar


def test_cifar100_download_and_convert(cifar, tmp_path, monkeypatch):
    tree_json = REPO / "hierviz" / "data" / "trees" / "cifar100.json"
    srv = tmp_path / "srv"
    srv.mkdir()
    tar = _fake_cifar_tar(srv, tree_json)
    inner = {n: md5((srv / "cifar-100-python" / n).read_bytes()) for n in ("train", "test", "meta")}
    monkeypatch.setattr(cifar, "URL", tar.as_uri())
    monkeypatch.setattr(cifar, "ARCHIVE_MD5", md5(tar.read_bytes()))
    monkeypatch.setattr(cifar, "INNER_MD5", inner)
    out = tmp_path / "out"
    assert cifar.main(["--out", str(out), "--quiet"]) == 0
    assert not (out / "cifar-100-python.tar.gz").exists()
    ds = load_dataset(out / "cifar100.npz")
    assert len(ds) == 300 and ds.num_classes == 100 and ds.images.shape[1:] == (32, 32, 3)
    assert ds.images[0, 5, 7].tolist() == [10, 20, 30]  # planes -> HWC
    assert (ds.official_split == "train").sum() == 200
    _, tree = bind_tree(ds, "cifar100")
    assert tree.leaves == ds.classes
    # a wrong inner checksum is caught before unpickling
    monkeypatch.setattr(cifar, "INNER_MD5", {**inner, "meta": "0" * 32})
    (out / "cifar100.npz").unlink()
    assert cifar.main(["--out", str(out), "--quiet"]) == 1


def test_cifar100_tree_check_catches_wrong_map(cifar, tmp_path):
    tree_json = REPO / "hierviz" / "data" / "trees" / "cifar100.json"
    _fake_cifar_tar(tmp_path, tree_json, swap=True)
    arrays = cifar.read_cifar100(tmp_path / "cifar-100-python", check_md5=False)
    with pytest.raises(ValueError, match="apple: data 'large_carnivores', tree 'fruit_and_vegetables'"):
        cifar.check_tree(arrays, tree_json)


# ----------------------------------------------------------------------------------- download_ham10000
@pytest.fixture(scope="module")
def ham():
    return _load("download_ham10000")


def _jpeg(color, size=(30, 20)) -> bytes:
    buf = io.BytesIO()
    im = np.zeros((size[1], size[0], 3), np.uint8)
    im[:] = color
    im[:, : (size[0] - size[1]) // 2] = (255, 255, 255)  # white left margin, cropped away
    Image.fromarray(im).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


META = "lesion_id,image_id,dx,dx_type,age,sex,localization\n" + "\n".join(
    [
        "HAM_0000002,ISIC_0000003,mel,histo,60,male,back",
        "HAM_0000001,ISIC_0000001,nv,histo,50,female,face",
        "HAM_0000001,ISIC_0000002,nv,follow_up,50,female,face",
    ]
)


def _ham_zips(tmp_path: Path) -> tuple[bytes, bytes]:
    z1, z2 = io.BytesIO(), io.BytesIO()
    with zipfile.ZipFile(z1, "w") as zf:
        zf.writestr("ISIC_0000001.jpg", _jpeg((200, 0, 0)))
        zf.writestr("ISIC_0000002.jpg", _jpeg((0, 200, 0)))
    with zipfile.ZipFile(z2, "w") as zf:
        zf.writestr("ISIC_0000003.jpg", _jpeg((0, 0, 200)))
    return z1.getvalue(), z2.getvalue()


def _listing(files: dict[str, bytes], md5_style: str = "md5") -> dict:
    out = []
    for i, (name, data) in enumerate(files.items()):
        df = {"id": 100 + i, "filename": name, "filesize": len(data)}
        if md5_style == "md5":
            df["md5"] = md5(data)
        else:
            df["checksum"] = {"type": "MD5", "value": md5(data)}
        if name.endswith(".tab"):
            df["originalFileFormat"] = "text/csv"
        out.append({"dataFile": df})
    out.append({"dataFile": {"id": 999, "filename": "ISIC2018_Task3_Test_Images.zip", "md5": "0" * 32}})
    return {"status": "OK", "data": {"latestVersion": {"files": out}}}


def test_ham_select_files(ham):
    files = {"HAM10000_images_part_1.zip": b"1", "HAM10000_images_part_2.zip": b"2", "HAM10000_metadata.tab": b"m"}
    sel = ham.select_files(_listing(files, "checksum"), api="https://x/api")
    assert [s["filename"] for s in sel] == [
        "HAM10000_images_part_1.zip",
        "HAM10000_images_part_2.zip",
        "HAM10000_metadata.csv",
    ]
    assert sel[0]["url"] == "https://x/api/access/datafile/100" and sel[0]["md5"] == md5(b"1")
    assert sel[2]["url"] == "https://x/api/access/datafile/102?format=original"
    bad = _listing({"HAM10000_images_part_1.zip": b"1"})
    with pytest.raises(ValueError, match="no file starting with 'HAM10000_images_part_2'"):
        ham.select_files(bad)
    nomd5 = _listing(files)
    del nomd5["data"]["latestVersion"]["files"][0]["dataFile"]["md5"]
    with pytest.raises(ValueError, match="no MD5"):
        ham.select_files(nomd5)
    with pytest.raises(ValueError, match="unexpected Dataverse listing"):
        ham.select_files({"data": {}})


def test_ham_read_metadata_csv_and_tab(ham, tmp_path):
    (tmp_path / "m.csv").write_text(META)
    tab = "\n".join("\t".join(f'"{x}"' for x in line.split(",")) for line in META.splitlines())
    (tmp_path / "m.tab").write_text(tab)  # Dataverse's ingested .tab quotes every string
    for f in ("m.csv", "m.tab"):
        rows = ham.read_metadata(tmp_path / f)
        assert [r["image_id"] for r in rows] == ["ISIC_0000003", "ISIC_0000001", "ISIC_0000002"]
    (tmp_path / "bad.csv").write_text(META.replace(",mel,", ",melanoma,"))
    with pytest.raises(ValueError, match=r"unknown diagnoses \['melanoma'\]"):
        ham.read_metadata(tmp_path / "bad.csv")


def test_ham_build_npz_from_zips(ham, tmp_path):
    z1, z2 = _ham_zips(tmp_path)
    (tmp_path / "p1.zip").write_bytes(z1)
    (tmp_path / "p2.zip").write_bytes(z2)
    (tmp_path / "meta.csv").write_text(META)
    out = ham.build_npz(
        [tmp_path / "p1.zip", tmp_path / "p2.zip"],
        tmp_path / "meta.csv",
        tmp_path / "h.npz",
        8,
        expected_counts=None,
        expected_lesions=None,
    )
    ds = load_dataset(out)
    assert ds.ids.tolist() == ["ISIC_0000001", "ISIC_0000002", "ISIC_0000003"]  # sorted by image_id
    assert ds.labels.tolist() == [0, 0, 1] and ds.classes == ham.CLASSES
    assert ds.groups.tolist() == ["HAM_0000001", "HAM_0000001", "HAM_0000002"]
    assert ds.images.shape == (3, 8, 8, 3)
    # centre crop removed the white margin: image 1 is red, image 3 blue
    assert ds.images[0, ..., 0].min() > 150 and ds.images[0, ..., 1].max() < 60
    assert ds.images[2, ..., 2].min() > 150 and ds.images[2, ..., 0].max() < 60
    with pytest.raises(ValueError, match="differ from the published HAM10000 counts"):
        ham.build_npz([tmp_path / "p1.zip", tmp_path / "p2.zip"], tmp_path / "meta.csv", tmp_path / "h2.npz", 8)
    with pytest.raises(ValueError, match=r"1 images listed .* are missing, e.g. \['ISIC_0000003'\]"):
        ham.build_npz([tmp_path / "p1.zip"], tmp_path / "meta.csv", tmp_path / "h3.npz", 8, expected_counts=None)


def test_ham_main_end_to_end_with_fake_dataverse(ham, tmp_path):
    z1, z2 = _ham_zips(tmp_path)
    files = {"HAM10000_images_part_1.zip": z1, "HAM10000_images_part_2.zip": z2, "HAM10000_metadata.tab": META.encode()}
    api = "https://dv.test/api"
    served = {f"{api}/datasets/:persistentId/?persistentId={ham.DOI}": json.dumps(_listing(files)).encode()}
    served[f"{api}/access/datafile/100"] = z1
    served[f"{api}/access/datafile/101"] = z2
    served[f"{api}/access/datafile/102?format=original"] = META.encode()
    server = FakeServer(served)
    out = tmp_path / "out"
    argv = ["--size", "8", "--out", str(out), "--api", api, "--quiet"]
    assert ham.main(argv + ["--no-count-check"], opener=server) == 0
    assert (out / "ham10000_8.npz").is_file() and (out / "ham10000_raw" / "HAM10000_metadata.csv").is_file()
    assert ham.main(argv, opener=server) == 1  # the published-count check fails on this 3-image fake
    served[f"{api}/access/datafile/100"] = b"tampered"
    (out / "ham10000_raw" / "HAM10000_images_part_1.zip").unlink()
    assert ham.main(argv + ["--no-count-check"], opener=server) == 1  # md5 from the listing catches it
    # --from-dir: no network at all
    local = tmp_path / "local"
    local.mkdir()
    (local / "HAM10000_images_part_1.zip").write_bytes(z1)
    (local / "HAM10000_images_part_2.zip").write_bytes(z2)
    (local / "HAM10000_metadata.csv").write_text(META)
    assert ham.main(["--from-dir", str(local), "--size", "8", "--out", str(tmp_path / "o2"), "--no-count-check"]) == 0


def test_scripts_do_nothing_at_import(tmp_path):
    """Importing every script runs no download and writes nothing."""
    before = set(SCRIPTS.iterdir())
    for name in ("_common", "download_medmnist", "download_cifar100", "download_ham10000", "make_ham10000_sample"):
        _load(name)
    assert set(p for p in SCRIPTS.iterdir() if p.name != "__pycache__") <= before
