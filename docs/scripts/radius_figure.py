"""Render the README's picture: the 20 Newsgroups tree in the Poincaré disk beside its radius by depth.

Reads the committed 5-seed study (``docs/results/radius-20news/``: seed 0's test embeddings
and the node prototype radii of every seed), draws the two figures with the package's own
plotly functions (:func:`hierviz.viz.plot_poincare_disk`, :func:`hierviz.viz.plot_node_radii`),
and takes one PNG screenshot of them side by side in headless Chromium (Playwright, Debian's
``chromium``; nothing is downloaded: plotly.js comes from the installed plotly package).

    python3 docs/scripts/radius_figure.py [--method supcon] [--out docs/images/radius-20news.png]
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "results" / "radius-20news"
CHROMIUM = Path(os.environ.get("HIERVIZ_CHROMIUM", "/usr/lib/chromium/chromium"))
NAMES = {"supcon": "SupCon", "hwc": "HWC", "hwc+lam": "HWC+LAM"}


def figures(method: str, geometry: str = "poincare"):
    """The disk of seed 0's test embeddings and the prototype radius of every node over all seeds."""
    from hierviz.data.trees import load_tree
    from hierviz.viz import plot_node_radii, plot_poincare_disk

    tree = load_tree("20news")
    f = np.load(STUDY / "embeddings" / f"{method.replace('+', '_')}-{geometry}-s0.npz")
    z, y, c = f["z_test"].astype(np.float64), f["y_test"].astype(np.int64), float(f["c"])
    name = NAMES.get(method, method)
    disk = plot_poincare_disk(
        z, y, tree, c=c, max_points=2500, title=f"20 Newsgroups, {name} on the Poincaré ball (seed 0, test)"
    )
    with (STUDY / "prototypes.csv").open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["method"] == method and r["geometry"] == geometry]
    radii = plot_node_radii(rows, title=f"Prototype radius by depth ({name}, Poincaré, 5 seeds)")
    return disk, radii


def render(figs, out: Path, width: int = 1500, height: int = 640) -> Path:
    """One PNG of ``figs`` side by side (headless Chromium)."""
    import plotly.io as pio
    from playwright.sync_api import sync_playwright

    divs = "".join(
        f'<div style="width:{width // len(figs)}px;height:{height}px;display:inline-block">'
        + pio.to_html(f, include_plotlyjs=(i == 0), full_html=False, default_width="100%", default_height="100%")
        + "</div>"
        for i, f in enumerate(figs)
    )
    html = f'<html><body style="margin:0;background:white;white-space:nowrap">{divs}</body></html>'
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "figure.html"
        page_file.write_text(html, encoding="utf-8")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-dev-shm-usage"])
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(page_file.as_uri())
            page.wait_for_function(f"document.querySelectorAll('.main-svg').length >= {len(figs)}")
            page.screenshot(path=str(out), full_page=False)
            browser.close()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="supcon", choices=sorted(NAMES))
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "radius-20news.png")
    a = ap.parse_args(argv)
    print(f"wrote {render(figures(a.method), a.out)}")


if __name__ == "__main__":
    main()
