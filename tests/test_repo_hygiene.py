"""What the committed files must not hold: tracker numbers in code and docs, machine paths in run configs.

History lives in CHANGELOG.md and git; a reader of a comment, a docstring, a notebook or a page has
no tracker to look an issue number up in, so each says the reason in the project's own terms. A run
folder committed under ``docs/results`` names its folders relative to the repository root, never
the absolute path of the machine that made it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hierviz.cli import main

ROOT = Path(__file__).resolve().parents[1]

#: The word "issue" and a number, with an optional space and "#" between: a tracker number. A citation of another project's tracker
#: is written ``owner/repo#141`` (no "issue" word), which this does not match.
ISSUE_NUMBER = re.compile(r"\bissue ?#?\d+", re.IGNORECASE)

#: The folders scanned (recursively) and the files at the root; CHANGELOG.md is history and is not.
SCANNED_DIRS = ("hierviz", "tests", "notebooks", "benchmarks", "data_scripts", "docs")
SCANNED_ROOT_FILES = ("README.md", "CONTRIBUTING.md", "pyproject.toml")
#: Text kinds scanned; generated pages (docs/results/**/*.html), CSVs and data files are not.
SUFFIXES = {".py", ".md", ".ipynb", ".toml", ".sh", ".yml", ".yaml", ".cfg", ".txt"}
_SKIP_PARTS = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}


def scanned_files(root: Path = ROOT) -> list[Path]:
    """The committed text files whose lines :func:`issue_number_hits` reads, sorted.

    Parameters
    ----------
    root : Path
        The repository root (default: the one holding this test file).

    Returns
    -------
    list of Path
        Files under :data:`SCANNED_DIRS` with a suffix in :data:`SUFFIXES` (outside caches), and
        :data:`SCANNED_ROOT_FILES` that exist.
    """
    files = [root / name for name in SCANNED_ROOT_FILES if (root / name).is_file()]
    for folder in SCANNED_DIRS:
        files += [
            p
            for p in (root / folder).rglob("*")
            if p.is_file() and p.suffix in SUFFIXES and not _SKIP_PARTS.intersection(p.parts)
        ]
    return sorted(files)


def issue_number_hits(path: Path, root: Path = ROOT) -> list[str]:
    """Every ``file:line: text`` of ``path`` that cites a tracker number (:data:`ISSUE_NUMBER`).

    Parameters
    ----------
    path : Path
        A text file (UTF-8); a notebook is read as its JSON text, so the line is the JSON file's.
    root : Path
        Paths in the result are relative to it.

    Returns
    -------
    list of str
        ``"relative/path:LINE: stripped line"``, in line order; empty when the file is clean.
    """
    rel = path.relative_to(root)
    return [
        f"{rel}:{i}: {line.strip()[:160]}"
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if ISSUE_NUMBER.search(line)
    ]


def test_no_issue_numbers_in_code():
    hits = [hit for path in scanned_files() for hit in issue_number_hits(path)]
    assert not hits, (
        f"{len(hits)} line(s) cite a tracker number; say the reason (what goes wrong without it), "
        "or a version, and leave the history to CHANGELOG.md:\n" + "\n".join(hits)
    )


#: Spelled apart in the examples below, so that this file passes its own scan.
_W = "issue"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (f"# {_W} 22: the depth regularisers", True),
        (f"(0.3, {_W.title()} 23)", True),
        (f"the bug of {_W} #141", True),
        ("HobbitLong/SupContrast#141", False),
        (f"an {_W} with 3 seeds", False),
        (f"t{_W} 12", False),
    ],
)
def test_issue_number_pattern(text, found):
    assert bool(ISSUE_NUMBER.search(text)) is found


def test_scan_names_file_and_line(tmp_path):
    (tmp_path / "hierviz").mkdir()
    (tmp_path / "hierviz" / "m.py").write_text(f"x = 1\ny = 2  # {_W} 7: why\n", encoding="utf-8")
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "report.html").write_text(f"{_W} 7", encoding="utf-8")  # generated: skipped
    (tmp_path / "CHANGELOG.md").write_text(f"- {_W} 7\n", encoding="utf-8")  # history: skipped
    files = scanned_files(tmp_path)
    assert files == [tmp_path / "hierviz" / "m.py"]
    assert issue_number_hits(files[0], tmp_path) == [f"hierviz/m.py:2: y = 2  # {_W} 7: why"]


#: An absolute path of a machine: a JSON string (or a word inside one) starting at one of these roots.
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|tmp|root|home|Users|mnt|scratch|var)/")


def test_no_machine_paths_in_committed_run_configs():
    files = sorted((ROOT / "docs" / "results").rglob("*.json"))
    assert len(files) >= 20  # compare.json / config.json of the committed runs are there to be checked
    hits = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()[:160]}"
        for p in files
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
        if MACHINE_PATH.search(line)
    ]
    assert not hits, "absolute machine paths in committed run files; record them relative to the repo root:\n" + (
        "\n".join(hits)
    )


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('"out": "/tmp/p04/ham/fold0"', True),
        ("--out /work/main/docs/results/x --quiet", True),
        ('"out": "docs/results/paper04/20news_fold0"', False),
        ('"tree": "20news"', False),
        ("https://example.org/home/page", False),
    ],
)
def test_machine_path_pattern(text, found):
    assert bool(MACHINE_PATH.search(text)) is found


def test_compare_records_out_relative_to_the_current_folder_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "docs" / "results" / "run"  # absolute, below the current folder
    args = [
        "compare",
        "--preset=quick-ham10000",
        "--limit",
        "60",
        "--epochs",
        "1",
        "--seeds",
        "1",
        "--methods",
        "supcon",
        "--geometry",
        "euclidean",
        "--out",
        str(out),
        "--encoder",
        "small_cnn",
        "--width",
        "4",
        "--embed-dim",
        "8",
        "--image-size",
        "16",
        "--batch-size",
        "32",
        "--projection",
        "pca",
        "--quiet",
    ]
    assert main(args) == 0
    capsys.readouterr()
    run_cfg = json.loads((out / "runs" / "supcon-euclidean-s0" / "config.json").read_text(encoding="utf-8"))
    top_cfg = json.loads((out / "config.json").read_text(encoding="utf-8"))
    meta = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert run_cfg["out"] == top_cfg["out"] == meta["config"]["out"] == "docs/results/run"
    assert meta["argv"][meta["argv"].index("--out") + 1] == "docs/results/run"
    assert "--out docs/results/run " in meta["header"]["Command"]
    written = "\n".join(p.read_text(encoding="utf-8") for p in out.rglob("*.json"))
    assert str(tmp_path) not in written  # no file of the folder names the machine's path
    # --resume with the absolute --out finds the finished run (out is not part of the fingerprint) ...
    assert main([*args, "--resume"]) == 0
    assert "supcon · euclidean · seed 0: finished earlier" in capsys.readouterr().out
    # ... and so does the relative spelling of the same folder
    i = args.index("--out")
    assert main([*args[: i + 1], "docs/results/run", *args[i + 2 :], "--resume"]) == 0
    assert "finished earlier" in capsys.readouterr().out


def test_out_outside_the_current_folder_is_recorded_as_given(tmp_path, monkeypatch):
    from hierviz.experiments.records import recorded_argv, recorded_config, recorded_path

    here, elsewhere = tmp_path / "repo", tmp_path / "scratch" / "run"
    here.mkdir()
    monkeypatch.chdir(here)
    assert recorded_path(elsewhere) == str(elsewhere)
    assert recorded_path(here / "a" / "b") == "a/b" and recorded_path(here) == "."
    assert recorded_path("../scratch/run") == "../scratch/run"  # relative: as given
    assert recorded_config({"out": str(here / "r"), "seeds": 2}) == {"out": "r", "seeds": 2}
    assert recorded_argv(["compare", f"--out={here / 'r'}"], here / "r") == ["compare", "--out=r"]
    assert recorded_argv(None, here) is None
