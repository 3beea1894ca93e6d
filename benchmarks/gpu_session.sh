#!/usr/bin/env bash
# One device call for the open GPU measurements (issues 25 and 22), within TOTAL seconds (default 560).
#
#   bash benchmarks/gpu_session.sh [TOTAL_SECONDS]     # on the device, repository root; writes under $OUT
#
# Needs: PYTHONPATH with hierviz's dependencies (geoopt, ...), HIERVIZ_DATA holding ham10000_32.npz,
# OUT (the folder that comes back; at most 8 files are fetched, so everything is archived).
# 1. issue 25's timed benchmarks on the idle GPU (gpu_check.sh STEPS=bench: pairwise vs cdist,
#    the loss shares compiled, and with CUDA graphs), about 2-3 min;
# 2. issue 22's radius table (gpu_radius_table.sh, SEEDS=1 unless set) in the time left, with
#    issue 25's `pytest -m gpu` beside it (correctness only, it may share the GPU).
# Files: $OUT/gpu_check.tgz, $OUT/radius/{commands.txt,radius_runs.tgz,radius_embeddings_s0.tgz},
# $OUT/session.txt. Made after the 2026-11-26 H100 call, whose radius archive came back too large.
set -u
TOTAL="${1:-560}"
T0=$SECONDS
: "${OUT:?set OUT to the folder that comes back}"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
  python3 -c "import torch; print('torch', torch.__version__)"; date -u; } > "$OUT/session.txt"
STEPS=bench bash benchmarks/gpu_check.sh "$OUT/check_bench" > /dev/null 2>&1
LEFT=$((TOTAL - (SECONDS - T0) - 45))
echo "radius budget ${LEFT} s" >> "$OUT/session.txt"
SEEDS="${SEEDS:-1}" bash benchmarks/gpu_radius_table.sh "$OUT/radius" "$LEFT" > /dev/null 2>&1 &
RPID=$!
STEPS=pytest PYTEST_SECONDS=200 bash benchmarks/gpu_check.sh "$OUT/check_pytest" > /dev/null 2>&1
tar -czf "$OUT/gpu_check.tgz" -C "$OUT" check_bench check_pytest && rm -rf "$OUT/check_bench" "$OUT/check_pytest"
wait "$RPID"
echo "done after $((SECONDS - T0)) s" >> "$OUT/session.txt"
tar -xzOf "$OUT/gpu_check.tgz" check_bench/summary.txt check_pytest/summary.txt >> "$OUT/session.txt" 2>/dev/null
cat "$OUT/session.txt"
