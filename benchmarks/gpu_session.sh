#!/usr/bin/env bash
# The open GPU measurements in ONE device call of at most TOTAL seconds (default 540), one process
# on the GPU at a time, steps in order of value, each under its own `timeout`:
#
#   a. pytest -m gpu (the test files that carry the gpu marker)                          <= 90 s
#   b. the radius table: HAM10000 at 32 px (ham10000_32.npz), `--preset gpu` as it is
#      (ResNet-18, 30 epochs, the package's head and depth-term defaults), SupCon and
#      HWC+LAM x Euclidean and Poincaré, seed 0: one `hierviz compare`, four runs in turn  <= 240 s
#   c. cost: Poincaré pairwise vs torch.cdist (4096 and 16384 x 128, fwd+bwd), the share
#      of a ResNet-50 224 px B128 bf16 step taken by SupCon and HWC+LAM with the objectives
#      compiled, then the same with CUDA graphs (torch.compile mode reduce-overhead)      <= 120 s
#   d. with the time left: seeds 1 and 2 of b (`--seeds 2 --resume`, then `--seeds 3 --resume`;
#      the first pass also finishes a seed-0 run that b's timeout cut short)
#
# Usage (from any folder; it works in the repository root):
#   bash benchmarks/gpu_session.sh [TOTAL_SECONDS]               # on the device; OUT must be set
#   OUT=/tmp/o bash benchmarks/gpu_session.sh --dry-run [TOTAL]   # the same plan on a CPU at tiny
#                                                                 # sizes (tests/test_bench_scripts.py)
#   bash benchmarks/gpu_session.sh --unpack gpu_session.tgz DIR   # the files as written, headers off
# Before the device call, on the machine that makes it: `bash benchmarks/gpu_prepare.sh` (the
# wheels the device lacks into .whl/, ham10000_32.npz and the commit into .gpudata/); the `run`
# call itself is in benchmarks/README.md ("One device call").
#
# Environment: OUT (required: the folder that comes back), WORK (scratch folder, default a new
# /tmp/gpu_session.XXXXXX; the checkpoints and embeddings stay there), PYTHON (default python3).
# On the device (not with --dry-run) the wheels in .whl/ are installed into /tmp/site and put on
# PYTHONPATH, and HIERVIZ_DATA defaults to .gpudata/ when it holds ham10000_32.npz.
#
# What comes back: $OUT/gpu_session.tgz (rewritten after every step and every finished radius
# run; under 8 MiB: logs, JSON results, the compare folder without checkpoints, embeddings or
# report.html) and $OUT/session.txt (each step's exit code, time and budget, the pytest line,
# every GOAL line with its verdict, the radius table). Every file carries a header with the
# nvidia-smi line, the torch version, the commit and the date: `# ` lines ending in `# ---`
# (text, CSV), an HTML comment (Markdown), a first "gpu_session" key on its own line (JSON).
# `--unpack` takes them off again, byte for byte, so `hierviz report --out DIR/gpu_session/radius`
# reads the compare folder. A step stopped by its timeout keeps what it wrote before.
set -u

DRY=0
TOTAL=""
UNPACK=()
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) DRY=1 ;;
        --unpack)
            [ $# -ge 3 ] || { echo "gpu_session.sh: --unpack needs ARCHIVE DIR, e.g. --unpack gpu_session.tgz /tmp/g" >&2; exit 2; }
            UNPACK=("$2" "$3")
            shift 2
            ;;
        -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        '' | *[!0-9]*) echo "gpu_session.sh: unknown argument '$1'; give --dry-run and/or TOTAL_SECONDS (e.g. 540), or --unpack ARCHIVE DIR" >&2; exit 2 ;;
        *) TOTAL="$1" ;;
    esac
    shift
done
PY="${PYTHON:-python3}"
HELPER="$(mktemp /tmp/gpu_session_archive.XXXXXX.py)" || exit 2
trap 'rm -f "$HELPER"' EXIT
cat > "$HELPER" << 'PYEOF'
"""pack WORK OUT LIMIT: WORK's small files, each with a header, into OUT/gpu_session.tgz, and OUT/session.txt.
unpack ARCHIVE DIR: the archive's files with their headers taken off (as the session wrote them)."""

import fnmatch
import io
import json
import os
import re
import sys
import tarfile
import time
from pathlib import Path

SKIP = ("checkpoint*", "*.pt", "*.pt.*", ".checkpoint*", "*.tmp-*", "*.tmp", "*.npz", "*.pth", "report.html",
        "header.txt")
TEXT_TAIL = 256 * 1024  # a log longer than this keeps its end
END = "# ---\n"
JSON_KEY = '{"gpu_session": '


def header_lines(work, rel, now):
    lines = (work / "header.txt").read_text(encoding="utf-8").splitlines()
    return [f"gpu_session.sh: {rel}, archived {now}"] + lines


def with_header(rel, data, lines):
    """The file's bytes behind a header that :func:`strip` removes again."""
    text = data.decode("utf-8", errors="replace")
    if rel.endswith(".json") and text.startswith("{") and text[1:].strip() not in ("", "}"):
        try:
            json.loads(text)
            meta = dict(ln.split(": ", 1) for ln in lines[1:] if ": " in ln)  # the same in every file
            return (JSON_KEY + json.dumps(meta, ensure_ascii=False) + ",\n").encode() + data[1:]
        except ValueError:
            pass
    if rel.endswith(".md"):
        return ("<!--\n" + "\n".join(lines) + "\n-->\n").encode() + data
    if rel.startswith("logs/") and len(data) > TEXT_TAIL:
        cut = len(data) - TEXT_TAIL
        data = f"[... first {cut} bytes left out ...]\n".encode() + data[cut:]
    return ("".join(f"# {ln}\n" for ln in lines) + END).encode() + data


def strip(data):
    """Inverse of :func:`with_header`."""
    if data.startswith(JSON_KEY.encode()):
        return b"{" + data[data.index(b"\n") + 1 :]
    if data.startswith(b"<!--\ngpu_session.sh: "):
        return data[data.index(b"\n-->\n") + 5 :]
    if data.startswith(b"# gpu_session.sh: "):
        return data[data.index(END.encode()) + len(END) :]
    return data


def read(p):
    try:
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def fmt(v, f="{:.3f}"):
    return "–" if v is None else f.format(v)


def radius_rows(work):
    rows = []
    for p in sorted(work.glob("radius/runs/*/result.json")):
        try:
            r = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        m, rad = r.get("metrics") or {}, r.get("radius") or {}
        rows.append(dict(method=r.get("method"), geometry=r.get("geometry"), seed=r.get("seed"),
                         top1=m.get("top1"), hf1=m.get("hf1"), violations=m.get("violations"),
                         clip=rad.get("clip_fraction"), spearman=rad.get("radius_depth_spearman"),
                         edge_order=rad.get("edge_order"), gap=rad.get("radius_gap"),
                         train_s=r.get("train_seconds"), device=r.get("device")))
    return rows


def radius_summary(rows):
    """The radius table and one GOAL line per target and Poincaré row (mean over the finished seeds)."""
    if not rows:
        return ["radius table: no finished run yet"]
    out = ["radius runs (test split; the GOAL lines average the seeds finished so far):",
           "| method | geometry | seed | top-1 | HF1 | violations | clip fraction | radius-depth Spearman | edge order "
           "| radius gap | train s | device |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r['method']} | {r['geometry']} | {r['seed']} | {fmt(r['top1'])} | {fmt(r['hf1'])} | "
                   f"{fmt(r['violations'])} | {fmt(r['clip'])} | {fmt(r['spearman'])} | {fmt(r['edge_order'])} | "
                   f"{fmt(r['gap'])} | {fmt(r['train_s'], '{:.0f}')} | {r['device']} |")

    def mean(rs, k):
        v = [r[k] for r in rs if r[k] is not None]
        return sum(v) / len(v) if v else None

    goals = (("clip", "clip fraction <= 0.05", lambda v: v <= 0.05),
             ("spearman", "radius_depth_spearman >= 0.9", lambda v: v >= 0.9),
             ("edge_order", "edge_order = 1.0", lambda v: v >= 1.0 - 1e-9),
             ("gap", "radius_gap >= 1.0", lambda v: v >= 1.0))
    for method in sorted({str(r["method"]) for r in rows}):
        euc = {r["seed"]: r for r in rows if r["method"] == method and r["geometry"] == "euclidean"}
        for geo in sorted({str(r["geometry"]) for r in rows if r["method"] == method} - {"euclidean"}):
            rs = [r for r in rows if r["method"] == method and r["geometry"] == geo]
            seeds = ",".join(str(r["seed"]) for r in rs)
            tag = f"GOAL radius {method} {geo}"
            for key, goal, ok in goals:
                v = mean(rs, key)
                verdict = "no value" if v is None else ("met" if ok(v) else "not met")
                out.append(f"{tag}: {goal} | measured {fmt(v)} (seeds {seeds}) | {verdict}")
            paired = [(r, euc[r["seed"]]) for r in rs if r["seed"] in euc]
            for key, name in (("hf1", "HF1"), ("top1", "top-1")):
                diffs = [a[key] - b[key] for a, b in paired if a[key] is not None and b[key] is not None]
                if not diffs:
                    out.append(f"{tag}: {name} within 2 points of Euclidean | no Euclidean run of the same seed yet "
                               "| no value")
                    continue
                d = sum(diffs) / len(diffs)
                out.append(f"{tag}: {name} within 2 points of Euclidean | measured {100 * d:+.1f} points "
                           f"(seeds {','.join(str(a['seed']) for a, _ in paired)}) | "
                           f"{'met' if d >= -0.02 else 'not met'}")
    return out


def summary(work):
    s = ["", "steps (name, exit code: 124 or 137 = stopped by its timeout, seconds, budget):"]
    s += read(work / "status.txt").splitlines()
    log = read(work / "logs" / "a_pytest_gpu.txt").splitlines()
    py = [ln for ln in log if re.search(r"\b(passed|failed|errors?|skipped|deselected|no tests ran)\b", ln)]
    if py:
        s.append("pytest -m gpu: " + py[-1].strip("= "))
        s += [ln for ln in log if ln.startswith(("FAILED", "ERROR"))]
    for p in sorted((work / "logs").glob("c*_*.txt")):
        s += [f"{p.stem}: {ln}" for ln in read(p).splitlines() if ln.startswith("GOAL")]
    s += [""] + radius_summary(radius_rows(work))
    s += ["", "commands:"] + read(work / "commands.txt").splitlines()
    return "\n".join(s) + "\n"


def pack(work, out, limit):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    files = {}
    for p in sorted(work.rglob("*")):
        rel = p.relative_to(work).as_posix()
        if p.is_file() and not p.is_symlink() and not any(fnmatch.fnmatch(p.name, pat) for pat in SKIP):
            files[rel] = p
    body = summary(work)
    drop = []
    while True:
        note = f"left out to stay under {limit} bytes: {', '.join(drop)}\n" if drop else ""
        session = with_header("session.txt", (body + note).encode(), header_lines(work, "session.txt", now))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=9) as tar:
            for rel, data in [("session.txt", session)] + [
                (rel, with_header(rel, p.read_bytes(), header_lines(work, rel, now)))
                for rel, p in files.items() if rel not in drop
            ]:
                info = tarfile.TarInfo(f"gpu_session/{rel}")
                info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
                tar.addfile(info, io.BytesIO(data))
        kept = [rel for rel in files if rel not in drop]
        if len(buf.getvalue()) < limit or not kept:
            break
        drop.append(max(kept, key=lambda r: files[r].stat().st_size))  # the largest file goes first
    for name, data in (("gpu_session.tgz", buf.getvalue()), ("session.txt", session)):
        tmp = out / f".{name}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, out / name)


def results_folder(head):
    """``docs/results/gpu/<date>-<gpu>`` from a header: the session's UTC date and the card, e.g. h100."""
    if head.get("mode", "").startswith("dry run"):
        return None
    card = head.get("nvidia-smi", "").split(",")[0].lower()
    m = re.search(r"\b([a-z]{1,2}\d{2,4}[a-z]?)\b", card.replace("nvidia", ""))
    slug = m.group(1) if m else (re.sub(r"[^a-z0-9]+", "-", card).strip("-") or "unknown-gpu")
    return f"docs/results/gpu/{head.get('date', 'unknown-date')[:10]}-{slug}"


def unpack(archive, dest):
    head = {}
    with tarfile.open(archive, "r:gz") as tar:
        for m in tar.getmembers():
            if not m.isfile() or m.name.startswith("/") or ".." in Path(m.name).parts:
                continue
            data = tar.extractfile(m).read()
            if m.name.endswith("/session.txt"):
                block = data.decode("utf-8", errors="replace").split(END, 1)[0].splitlines()
                head = dict(ln[2:].split(": ", 1) for ln in block[1:] if ": " in ln)
            target = dest / m.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(strip(data))
    print(f"unpacked {archive} into {dest}/gpu_session (headers taken off)")
    folder = results_folder(head)
    if folder is None:
        print("a dry run: no figures to commit")
    else:
        print(f"the figures go to {folder}/ (benchmarks/README.md, 'One device call')")


if __name__ == "__main__":
    if sys.argv[1] == "pack":
        pack(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        unpack(Path(sys.argv[2]), Path(sys.argv[3]))
PYEOF
if [ ${#UNPACK[@]} = 2 ]; then
    mkdir -p "${UNPACK[1]}" && "$PY" "$HELPER" unpack "${UNPACK[0]}" "${UNPACK[1]}"
    exit $?
fi

: "${OUT:?set OUT to the folder that comes back (on the device it is set; for a dry run e.g. OUT=/tmp/o)}"
cd "$(dirname "$0")/.." || exit 2
ROOT="$PWD"
mkdir -p "$OUT" || exit 2
OUT="$(cd "$OUT" && pwd)"
WORK="${WORK:-$(mktemp -d /tmp/gpu_session.XXXXXX)}"
mkdir -p "$WORK/logs" "$WORK/cost" || exit 2
WORK="$(cd "$WORK" && pwd)"
export PYTHONUNBUFFERED=1
T0=$SECONDS

if [ "$DRY" = 1 ]; then
    # budgets far above the minute or two a dry run takes: on a busy CPU only the caller's own
    # timeout should stop it (the timeouts themselves are checked by a run with no time left)
    TOTAL="${TOTAL:-3600}"
    RESERVE=3               # seconds kept for the last archive
    MIN_STEP=1              # a step starts only with at least this many seconds left
    MIN_RADIUS_PASS=1       # a seed pass of step d starts only with this many seconds left
    CAP_A=900 CAP_B=900 CAP_C1=900 CAP_C2=900 CAP_C3=900 CAP_C=1800
    DEVICE=cpu
    MODE="dry run on the CPU at tiny sizes: NOT figures"
    # the gpu preset on a CPU: no AMP, CPU augmentation, no workers, 120 images, 1 epoch, a small CNN
    RADIUS_SIZE=(--set train.device=cpu --set train.amp=false --set train.augment_on=cpu
        --set data.workers=0 --set data.persistent_workers=false --set data.prefetch_factor=null
        --set data.limit=120 --set train.epochs=1 --set train.batch_size=32
        --set model.encoder=small_cnn --set model.width=8 --set model.embed_dim=16)
    PAIRWISE_SIZE=(--n 32,48 --d 4 --repeats 1)
    # the eager backend traces the same fullgraph objectives (dynamo) without code generation; the
    # Poincaré ones only (the geometry whose compile failed on a GPU before; tracing costs seconds)
    SHARE_SIZE=(--encoder small_cnn --image-size 16 --batch 8 --repeats 1 --compile-backend eager --geometries poincare)
    export CUDA_VISIBLE_DEVICES=""
else
    TOTAL="${TOTAL:-540}"
    RESERVE=10
    MIN_STEP=15
    MIN_RADIUS_PASS=50      # one ResNet-18 run of b took about 40 s on an H200
    CAP_A=90 CAP_B=240 CAP_C1=30 CAP_C2=75 CAP_C3=60 CAP_C=120  # c3 gets what c1, c2 leave of CAP_C
    DEVICE=cuda
    MODE="GPU"
    RADIUS_SIZE=()          # the gpu preset as it is
    PAIRWISE_SIZE=(--n 4096,16384 --d 128 --repeats 7)
    # the Poincaré objectives first (their compiled share was never measured); each geometry's rows,
    # GOAL lines and JSON are written as it finishes
    SHARE_SIZE=(--encoder resnet50 --image-size 224 --batch 128 --repeats 10 --geometries poincare,euclidean)
    if compgen -G ".whl/*.whl" > /dev/null; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
            > "$WORK/logs/0_wheels.txt" 2>&1 || echo "installing .whl/*.whl failed: see logs/0_wheels.txt" >> "$WORK/status.txt"
        export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
    fi
    if [ -z "${HIERVIZ_DATA:-}" ] && [ -f .gpudata/ham10000_32.npz ]; then
        export HIERVIZ_DATA="$ROOT/.gpudata"
    fi
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
DEADLINE=$((TOTAL - RESERVE))
touch "$WORK/status.txt" "$WORK/commands.txt"

# ------------------------------------------------------------------ the header of every file
if git -C "$ROOT" rev-parse HEAD > /dev/null 2>&1; then
    COMMIT="$(git -C "$ROOT" rev-parse HEAD) ($(git -C "$ROOT" status --porcelain --untracked-files=no | wc -l | tr -d ' ') files changed since)"
elif [ -s .gpudata/commit.txt ]; then
    COMMIT="$(head -1 .gpudata/commit.txt) (from .gpudata/commit.txt)"
else
    COMMIT="unknown (no git checkout, no .gpudata/commit.txt: run benchmarks/gpu_prepare.sh before the call)"
fi
if command -v nvidia-smi > /dev/null 2>&1; then
    SMI="$(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>&1 | head -1)"
    nvidia-smi > "$WORK/logs/0_nvidia_smi.txt" 2>&1
else
    SMI="not available (no NVIDIA driver on this machine)"
fi
TORCH="$("$PY" -c '
import importlib.metadata as md
import torch
dev = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
pk = []
for n in ("geoopt", "plotly", "torchvision", "numpy"):
    try:
        pk.append(f"{n} {md.version(n)}")
    except md.PackageNotFoundError:
        pk.append(f"{n} missing")
print(f"{torch.__version__} (CUDA {torch.version.cuda}, {dev}); " + ", ".join(pk))' 2>&1 | tail -1)"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) (session start, UTC)"
    echo "commit: $COMMIT"
    echo "torch: $TORCH"
    echo "nvidia-smi: $SMI"
    echo "mode: $MODE; budget $TOTAL s; host ${HOSTNAME:-unknown}"
} > "$WORK/header.txt"

archive() {
    "$PY" "$HELPER" pack "$WORK" "$OUT" $((8 * 1024 * 1024)) >> "$WORK/logs/0_archive.txt" 2>&1 ||
        echo "archive failed after $((SECONDS - T0)) s: see logs/0_archive.txt" >> "$WORK/status.txt"
}

left() { echo $((DEADLINE - (SECONDS - T0))); }

# step NAME CAP CMD...: CMD under `timeout` for min(CAP, time left), output to logs/NAME.txt, one
# status line, and the archive rewritten after every finished radius run and at the end
step() {
    local name="$1" cap="$2"
    shift 2
    local l secs t rc sig last cur
    l=$(left)
    secs=$((cap < l ? cap : l))
    if [ "$secs" -lt "$MIN_STEP" ]; then
        echo "$name skipped at $((SECONDS - T0)) s: $l s left of the budget" >> "$WORK/status.txt"
        return 0
    fi
    printf '%s (timeout %s s):' "$name" "$secs" >> "$WORK/commands.txt"
    printf ' %q' "$@" >> "$WORK/commands.txt"
    echo >> "$WORK/commands.txt"
    t=$SECONDS
    last="$(ls "$WORK"/radius/runs/*/result.json 2> /dev/null | tr '\n' ' ')"
    timeout -k 5 "$secs" "$@" > "$WORK/logs/$name.txt" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2> /dev/null; do
        sleep 1
        cur="$(ls "$WORK"/radius/runs/*/result.json 2> /dev/null | tr '\n' ' ')"
        if [ "$cur" != "$last" ]; then
            last="$cur"
            [ -n "$cur" ] && archive
        fi
    done
    wait "$pid"
    rc=$?
    sig=""
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && sig=" (timed out)"
    echo "$name rc=$rc seconds=$((SECONDS - t)) budget=$secs$sig" >> "$WORK/status.txt"
    archive
}

# ------------------------------------------------------------------ a. pytest -m gpu
mapfile -t GPU_TESTS < <(grep -l -E 'mark\.gpu\b' tests/test_*.py 2> /dev/null)
[ "${#GPU_TESTS[@]}" = 0 ] && GPU_TESTS=(tests)
# -o addopts="": no doctests, no `-m 'not gpu'`; collection errors (modules importing packages the
# device lacks) do not stop the GPU tests of the other modules
step a_pytest_gpu "$CAP_A" "$PY" -m pytest -o addopts="" -m gpu "${GPU_TESTS[@]}" -q -rfEs -p no:cacheprovider \
    -p no:randomly --continue-on-collection-errors

# ------------------------------------------------------------------ b. the radius table, seed 0
RADIUS=(-m hierviz compare --preset gpu --methods supcon,hwc+lam --geometry euclidean,poincare
    --set data.image_size=32 --set train.compile_loss=false --set eval.projection=pca --quiet
    --out "$WORK/radius" "${RADIUS_SIZE[@]}")
step b_radius_seed0 "$CAP_B" "$PY" "${RADIUS[@]}" --seeds 1

# ------------------------------------------------------------------ c. loss shares, pairwise vs cdist
C0=$SECONDS
c_cap() { # the smaller of a sub-step's cap and what is left of c's
    local rest=$((CAP_C - (SECONDS - C0)))
    echo $(($1 < rest ? $1 : rest))
}
step c1_pairwise_vs_cdist "$(c_cap "$CAP_C1")" "$PY" benchmarks/bench_pairwise_dist.py --vs-cdist --device "$DEVICE" \
    "${PAIRWISE_SIZE[@]}" --json "$WORK/cost/pairwise_vs_cdist.json"
step c2_losses_share_compiled "$(c_cap "$CAP_C2")" "$PY" benchmarks/bench_losses.py --share --compile-loss \
    --device "$DEVICE" "${SHARE_SIZE[@]}" --json "$WORK/cost/losses_share_compiled.json"
if [ "$DEVICE" = cuda ]; then  # CUDA graphs apply on a CUDA device only
    step c3_losses_share_cudagraphs "$(c_cap "$CAP_C3")" "$PY" benchmarks/bench_losses.py --share --compile-loss \
        --compile-mode reduce-overhead --device "$DEVICE" "${SHARE_SIZE[@]}" \
        --json "$WORK/cost/losses_share_cudagraphs.json"
else
    echo "c3_losses_share_cudagraphs skipped: CUDA graphs apply on a CUDA device only" >> "$WORK/status.txt"
fi

# ------------------------------------------------------------------ d. seeds 1 and 2 of b
# (--resume reuses the finished runs; a seed-0 run that b's timeout cut short continues in its turn)
for n in 2 3; do
    if [ "$DRY" = 1 ] && [ "$n" = 3 ]; then
        echo "d_radius_seeds3 skipped: the dry run checks one resumed pass" >> "$WORK/status.txt"
        continue
    fi
    if [ "$(left)" -lt "$MIN_RADIUS_PASS" ]; then
        echo "d_radius_seeds$n skipped at $((SECONDS - T0)) s: $(left) s left of the budget" >> "$WORK/status.txt"
        continue
    fi
    step "d_radius_seeds$n" "$(left)" "$PY" "${RADIUS[@]}" --seeds "$n" --resume
done

echo "session done after $((SECONDS - T0)) s of $TOTAL" >> "$WORK/status.txt"
archive
cat "$OUT/session.txt"
