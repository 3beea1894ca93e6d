#!/usr/bin/env bash
# Ready the working tree for the one device call of benchmarks/gpu_session.sh. Run it HERE, in the
# checkout that the device call sends (the repository root), right before the call:
#
#   bash benchmarks/gpu_prepare.sh
#
# 1. .whl/: the wheels of hierviz's dependencies that the device image lacks (geoopt, plotly; pure
#    Python), at the versions installed here, fetched with `pip download --no-deps` for CPython
#    3.12 on x86-64 (the device's python3). .whl/ is in .gitignore.
# 2. .gpudata/: ham10000_32.npz (found as hierviz finds it: $HIERVIZ_DATA, then ../shared/data)
#    and commit.txt (the commit and the number of changed files: the device copy has no git).
#    The folder ignores itself (its own .gitignore holds '*'): nothing to add to .gitignore.
# 3. Checks that the tree plus the two folders stay under the 64 MiB a call may carry, and prints
#    the call: carry [".whl", ".gpudata"], command `bash benchmarks/gpu_session.sh 540`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
mkdir -p .whl .gpudata
printf '*\n' > .gpudata/.gitignore

pkgs=()
for name in geoopt plotly; do
    pkgs+=("$name==$("$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name")")
done
rm -f .whl/geoopt-*.whl .whl/plotly-*.whl  # one version of each: two stop the install on the device
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "${pkgs[@]}"

data="$("$PY" -c "from hierviz.data.base import find_data_file; print(find_data_file('ham10000_32.npz'))")"
case "$data" in
    *ham10000_32.npz) cp -f "$data" .gpudata/ham10000_32.npz ;;
    *) echo "gpu_prepare.sh: ham10000_32.npz not found (set HIERVIZ_DATA or put it in ../shared/data)" >&2; exit 1 ;;
esac
echo "$(git rev-parse HEAD) ($(git status --porcelain --untracked-files=no | wc -l | tr -d ' ') files changed since), prepared $(date -u +%Y-%m-%dT%H:%MZ)" > .gpudata/commit.txt

tree_bytes=$( (git ls-files -z --cached --others --exclude-standard | xargs -0 cat 2> /dev/null; cat .whl/* .gpudata/*) | wc -c)
echo "wheels: $(cd .whl && ls | tr '\n' ' ')"
echo "data: .gpudata/ham10000_32.npz ($(du -h .gpudata/ham10000_32.npz | cut -f1)), $(cat .gpudata/commit.txt)"
echo "the call carries about $((tree_bytes / 1048576)) MiB of 64"
if [ "$tree_bytes" -gt $((62 * 1048576)) ]; then
    echo "gpu_prepare.sh: over 62 MiB; remove other files from .whl/ or large untracked files first" >&2
    exit 1
fi
cat << 'EOF'
device call (benchmarks/README.md, "One device call"):
  run  command: bash benchmarks/gpu_session.sh 540
       carry:   [".whl", ".gpudata"]
       timeout_s: 600
EOF
