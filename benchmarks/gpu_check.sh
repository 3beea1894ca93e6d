#!/usr/bin/env bash
# The GPU checks of the compiled objectives and kernel, unattended, in < 4 minutes on one H100/H200.
# For the one prepared device call, use gpu_session.sh instead (these steps within a 540 s plan).
#
#   bash benchmarks/gpu_check.sh OUT_DIR          # from the repository root, PYTHONPATH set
#   DEVICE=cpu QUICK=1 bash benchmarks/gpu_check.sh OUT_DIR   # the CPU smoke path (tiny sizes)
#   STEPS=bench bash benchmarks/gpu_check.sh OUT_DIR          # only the timed steps 2-3 (an idle GPU);
#   STEPS=pytest bash benchmarks/gpu_check.sh OUT_DIR         # only step 1 (may share the GPU)
#
# Steps (each under `timeout`, the script never stops early; the exit code of each is in
# OUT_DIR/status.txt):
#   1. pytest -m gpu                          -> OUT_DIR/pytest_gpu.txt            (90 s)
#   2. bench_pairwise_dist.py --vs-cdist      -> OUT_DIR/pairwise_vs_cdist.{txt,json} (35 s)
#      4096x128 and 16384x128, the default kernel (compiled on CUDA), eager and reference
#   3. bench_losses.py --share --compile-loss -> OUT_DIR/losses_share.{txt,json}  (110 s)
#      ResNet-50, 224 px, B128, bf16: the train.compile_loss path of the gpu preset
#   4. the same with --compile-mode reduce-overhead -> OUT_DIR/losses_share_cudagraphs.{txt,json} (110 s)
#      CUDA graphs on the compiled objectives (not yet a training option: measured first)
# Then OUT_DIR/summary.txt: the device, the pytest result line and every GOAL line.
set -u
OUT="${1:?usage: gpu_check.sh OUT_DIR}"
mkdir -p "$OUT"
DEVICE="${DEVICE:-cuda}"
QUICK="${QUICK:-0}"
STEPS="${STEPS:-all}"
PY="${PYTHON:-python3}"
: > "$OUT/status.txt"

run() {  # run NAME SECONDS CMD...: output to OUT/NAME.txt, exit status to status.txt
    local name="$1" secs="$2"
    shift 2
    local t0=$SECONDS
    timeout -k 5 "$secs" "$@" > "$OUT/$name.txt" 2>&1
    local rc=$?
    echo "$name rc=$rc seconds=$((SECONDS - t0))$([ $rc -eq 124 ] && echo ' (timed out)')" >> "$OUT/status.txt"
}

"$PY" -c "import torch; print('torch', torch.__version__, '|', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA device')" > "$OUT/device.txt" 2>&1
date -u +%Y-%m-%dT%H:%MZ >> "$OUT/device.txt"

if [ "$QUICK" = 1 ]; then
    PD_ARGS=(--n 256,512 --d 32 --repeats 2)
    LS_ARGS=(--encoder small_cnn --image-size 32 --batch 16 --repeats 2 --geometries euclidean)
    PYTEST_SEL=(tests/test_gpu.py tests/test_index_precision.py)
else
    PD_ARGS=(--n 4096,16384 --d 128 --repeats 7)
    LS_ARGS=(--encoder resnet50 --image-size 224 --batch 128 --repeats 10)
    PYTEST_SEL=(tests)
fi

# --continue-on-collection-errors: the device image lacks the notebook/docs packages (nbformat,
# papermill, playwright) that some test modules import at the top; no GPU test lives in those
[ "$STEPS" != bench ] && run pytest_gpu "${PYTEST_SECONDS:-90}" "$PY" -m pytest -o addopts="" -m gpu "${PYTEST_SEL[@]}" -q -p no:randomly -p no:cacheprovider \
    --continue-on-collection-errors
[ "$STEPS" != pytest ] && run pairwise_vs_cdist 35 "$PY" benchmarks/bench_pairwise_dist.py --vs-cdist --device "$DEVICE" "${PD_ARGS[@]}" \
    --json "$OUT/pairwise_vs_cdist.json"
[ "$STEPS" != pytest ] && run losses_share 110 "$PY" benchmarks/bench_losses.py --share --compile-loss --device "$DEVICE" "${LS_ARGS[@]}" \
    --json "$OUT/losses_share.json"
[ "$STEPS" != pytest ] && run losses_share_cudagraphs 110 "$PY" benchmarks/bench_losses.py --share --compile-loss \
    --compile-mode reduce-overhead --device "$DEVICE" "${LS_ARGS[@]}" --json "$OUT/losses_share_cudagraphs.json"

{
    cat "$OUT/device.txt"
    cat "$OUT/status.txt"
    [ -f "$OUT/pytest_gpu.txt" ] && echo "pytest: $(grep -E '(passed|failed|error|skipped|deselected)' "$OUT/pytest_gpu.txt" | tail -1)"
    grep -H '^GOAL' "$OUT/pairwise_vs_cdist.txt" "$OUT/losses_share.txt" "$OUT/losses_share_cudagraphs.txt" 2>/dev/null | sed "s#^$OUT/##"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
