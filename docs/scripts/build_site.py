"""Build the hierviz docs site: execute the course notebooks (``SIZE="medium"``), then ``mkdocs build --strict``.

Usage (from the repository root)::

    python3 docs/scripts/build_site.py                       # all notebooks → build/site-notebooks/, site/
    python3 docs/scripts/build_site.py --notebooks 00 03     # execute only these (by number or stem)
    python3 docs/scripts/build_site.py --no-execute          # reuse the executed copies already there
    python3 docs/scripts/build_site.py --site-dir /tmp/site --notebook-dir /tmp/nb
    python3 docs/scripts/build_site.py --size smoke          # quick check of the build (numbers are noise)

Each notebook runs with papermill at ``SIZE="medium"`` (``--size``; the site must not publish SMOKE
numbers, which are noise: SMOKE stays for the tests) in ``notebooks/`` (its own working directory).
At medium every notebook takes at most a few minutes on a 2-core CPU (``docs/course.md``).
Its plotly outputs then get an HTML rendering (:class:`hierviz.notebook_html.PlotlyToHTML`) and its
widget views a note (:class:`~hierviz.notebook_html.WidgetNote`), and the copy is written to the
notebook folder, where ``docs/scripts/mkdocs_hooks.py`` picks it up; mkdocs-jupyter renders it
without executing it again. A notebook that is not executed renders from its clean source; a copy executed at SMOKE size stops
the build (``mkdocs_hooks.check_published``) unless ``--size smoke`` made it a test build.
Exit status: 0 built, 1 a notebook or mkdocs failed (its message printed), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def select(names: list[str] | None) -> list[Path]:
    """The notebooks to execute: all ``notebooks/NN_*.ipynb``, or those named by number or stem."""
    every = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if names is None:
        return every
    chosen = []
    for name in names:
        hits = [p for p in every if p.stem == name or p.stem.split("_", 1)[0] == name.zfill(2)]
        if not hits:
            raise SystemExit(
                f"--notebooks: no notebook {name!r} in {NOTEBOOKS} (have: {', '.join(p.stem for p in every)})"
            )
        chosen += hits
    return chosen


#: ``--size`` values and the papermill parameters each one sets.
SIZES = {
    "smoke": {"SMOKE": True},
    "medium": {"SMOKE": False, "SIZE": "medium"},
    "full": {"SMOKE": False, "SIZE": "full"},
}


def execute(src: Path, out_dir: Path, timeout: int, size: str = "medium") -> float:
    """Run one notebook at ``size`` and write the site's copy (plotly → HTML, widgets → note)."""
    import nbformat
    import papermill as pm

    from hierviz.notebook_html import PlotlyToHTML, WidgetNote

    t0 = time.perf_counter()
    nb = pm.execute_notebook(
        str(src),
        None,
        parameters=SIZES[size],
        kernel_name="python3",
        cwd=str(src.parent),
        progress_bar=False,
        execution_timeout=timeout,
    )
    nb = nbformat.from_dict(nb)
    for pre in (WidgetNote(), PlotlyToHTML()):
        nb, _ = pre.preprocess(nb, {})
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (src.name + ".tmp")
    nbformat.write(nb, tmp)
    os.replace(tmp, out_dir / src.name)  # atomic: a half-written notebook never reaches the site
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notebooks", nargs="*", help="execute only these notebooks (number like 03 or stem)")
    ap.add_argument("--no-execute", action="store_true", help="execute nothing; use the copies already there")
    ap.add_argument("--notebook-dir", type=Path, default=ROOT / "build" / "site-notebooks")
    ap.add_argument("--site-dir", type=Path, default=ROOT / "site")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per notebook cell (default 600)")
    ap.add_argument(
        "--size", choices=tuple(SIZES), default="medium", help="notebook size to publish (default medium; smoke = test)"
    )
    args = ap.parse_args(argv)

    nb_dir = args.notebook_dir.resolve()
    if not args.no_execute:
        todo = select(args.notebooks)
        try:
            from tqdm.auto import tqdm
        except ImportError:  # pragma: no cover - tqdm is a core dependency
            tqdm = None
        bar = tqdm(todo, desc=f"notebooks ({args.size})", unit="nb") if tqdm else todo
        for src in bar:
            try:
                secs = execute(src, nb_dir, args.timeout, args.size)
            except Exception as exc:  # papermill raises PapermillExecutionError with the cell's traceback
                print(
                    f"build_site: {src.name} failed at size {args.size}: {str(exc).strip().splitlines()[-1]}",
                    file=sys.stderr,
                )
                return 1
            print(f"build_site: {src.name} executed at size {args.size} in {secs:.1f} s", file=sys.stderr)

    env = dict(os.environ, HIERVIZ_SITE_NOTEBOOKS=str(nb_dir), NO_MKDOCS_2_WARNING="1")
    if args.size == "smoke":  # a test build: the hook refuses SMOKE copies otherwise (mkdocs_hooks.check_published)
        env["HIERVIZ_SITE_ALLOW_SMOKE"] = "1"
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml")]
    cmd += ["--site-dir", str(args.site_dir.resolve())]
    t0 = time.perf_counter()
    rc = subprocess.call(cmd, cwd=ROOT, env=env)
    if rc != 0:
        print(f"build_site: mkdocs build --strict failed (exit {rc}); its warnings are above", file=sys.stderr)
        return 1
    print(f"build_site: site in {args.site_dir} ({time.perf_counter() - t0:.1f} s for mkdocs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
