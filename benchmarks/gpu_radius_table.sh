#!/usr/bin/env bash
# The hierarchy-in-radius GPU table, unattended, inside a fixed time budget on one H100/H200.
# For the one prepared device call, use gpu_session.sh instead (one process at a time, 540 s).
#
#   bash benchmarks/gpu_radius_table.sh OUT_DIR [SECONDS]     # repository root, PYTHONPATH set
#   CPU=1 bash benchmarks/gpu_radius_table.sh OUT_DIR 600     # the CPU smoke path (tiny sizes)
#
# The gpu preset (ResNet-18, 30 epochs, bf16, device augmentation) on the full HAM10000 at 32 px
# (ham10000_32.npz under HIERVIZ_DATA), SupCon and HWC+LAM, 3 seeds, four heads side by side:
#   euclidean  the Euclidean rows (the reference of the targets)
#   old        hierviz 0.2's Poincaré head: hard clip at tangent norm 3, scale 1, no regulariser
#   new        0.3's Poincaré head at the preset defaults (tanh bound, data-initialised scale,
#              cones 0.2, centring 1.0), every key explicit so later default changes do not alter it
#   c1         the best CPU setting of docs/hyperbolic-fidelity.md (follow-up 2, row C1)
# Each head x method is its own `hierviz compare` process (one GPU, run side by side: at 32 px a
# ResNet-18 step leaves the GPU mostly idle); each process runs seeds 0, 1, 2 in turn, so a budget
# that runs out still leaves the first seeds of every row. train.compile_loss is off (the radius
# table measures embeddings, not speed; compiled and eager objectives agree, tests/test_compile_losses.py)
# and the report's map is PCA. OUT_DIR/radius_runs.tgz (rewritten every 30 s) holds the folders
# without checkpoints or embeddings, OUT_DIR/radius_embeddings_s0.tgz the seed-0 test embeddings.
# On 2026-11-26 (one H100) the 8 processes with 3 seeds did not finish in 433 s, and the final
# archive, which then still held the interrupted runs' checkpoint.pt.prev files, came back too
# large: give it about 15 minutes (SEEDS=1 for a first look), and keep the archive small.
set -u
OUT="${1:?usage: gpu_radius_table.sh OUT_DIR [SECONDS]}"
BUDGET="${2:-300}"
PY="${PYTHON:-python3}"
RUNS="${RUNS:-/tmp/radius_runs}"
mkdir -p "$OUT" "$RUNS"
T0=$SECONDS

COMMON=(--preset gpu --seeds "${SEEDS:-3}" --set data.image_size=32 --set train.compile_loss=false
    --set eval.projection=pca --set data.workers=2)
if [ "${CPU:-0}" = 1 ]; then
    COMMON=(--preset gpu --seeds 1 --set data.image_size=32 --set train.compile_loss=false
        --set eval.projection=pca --set train.device=cpu --set train.amp=false --set train.augment_on=cpu
        --set data.workers=0 --set data.persistent_workers=false --set data.prefetch_factor=null
        --set data.limit=120 --set train.epochs=1 --set train.batch_size=32 --set model.encoder=small_cnn)
fi
HEAD_euclidean=(--geometry euclidean)
HEAD_old=(--geometry poincare --set model.head_bound=clip --set model.scale_init=1 --set model.clip_r=3
    --set loss.cone_weight=0 --set loss.center_weight=0)
HEAD_new=(--geometry poincare --set model.head_bound=tanh --set model.scale_init=auto --set model.init_radius=1
    --set model.clip_r=3 --set loss.cone_weight=0.2 --set loss.center_weight=1.0 --set loss.cone_aperture=0.1)
HEAD_c1=(--geometry poincare --set model.head_center=batch --set model.scale_init=batch --set loss.cone_weight=1
    --set loss.cone_aperture=0.02 --set loss.order_weight=100 --set loss.order_margin=0.05)

pids=()
for head in euclidean new old c1; do
    declare -n args="HEAD_$head"
    for method in supcon hwc+lam; do
        name="$head-${method/+/}"
        echo "$name: $PY -m hierviz compare --methods $method ${COMMON[*]} ${args[*]} --out $RUNS/$name" >> "$OUT/commands.txt"
        timeout -k 10 "$BUDGET" "$PY" -m hierviz compare --methods "$method" "${COMMON[@]}" "${args[@]}" \
            --out "$RUNS/$name" > "$RUNS/$name.log" 2>&1 &
        pids+=($!)
    done
    unset -n args
done
collect() {  # what is finished so far, small: records, tables, logs; no checkpoints, no embeddings
    tar -czf "$OUT/.radius_runs.tgz" -C "$RUNS" --exclude='checkpoint.pt*' --exclude='.checkpoint*' \
        --exclude='*.tmp-*' --exclude='report.html' --exclude='embeddings.npz' . 2>/dev/null
    mv -f "$OUT/.radius_runs.tgz" "$OUT/radius_runs.tgz"
}
while kill -0 "${pids[@]}" 2>/dev/null; do  # every 30 s, so a call that runs out of time still returns them
    sleep 30
    collect
done
for p in "${pids[@]}"; do wait "$p"; done
echo "training done after $((SECONDS - T0)) s" >> "$OUT/commands.txt"
collect
(cd "$RUNS" && find . -path '*-s0/embeddings.npz' -print0 | tar -czf "$OUT/radius_embeddings_s0.tgz" --null -T -)
echo "collected after $((SECONDS - T0)) s" >> "$OUT/commands.txt"
# The tables of a folder whose compare was stopped: `hierviz report --out FOLDER --projection pca`
# after unpacking (it reads the finished runs' records).
