#!/usr/bin/env bash
# One prepared GPU check for a machine with a CUDA device (run from the repository root):
# the kernels' GPU parity tests, the sm_90 compile tests, then the GPU section of the kernel
# benchmark. Prints everything; put the benchmark table into docs/benchmarks.md ("Kernels")
# with the date and the GPU's name. About 2-4 minutes on an H100/H200 (first launches compile).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export OMP_NUM_THREADS=1 TRITON_DEFAULT_FP_FUSION=${TRITON_DEFAULT_FP_FUSION:-1}
unset TRITON_INTERPRET
"$PY" - <<'PYEOF'
import torch, triton
assert torch.cuda.is_available(), "no CUDA device visible"
print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__, "| triton", triton.__version__)
PYEOF
echo "== GPU parity tests (kernel == reference) and compile tests"
timeout 300 "$PY" -m pytest -q -p no:cacheprovider tests/kernels -m gpu --timeout=240 || status=$?
timeout 120 "$PY" -m pytest -q -p no:cacheprovider tests/kernels/test_compile.py || status=$?
echo "== kernel benchmark (GPU section)"
timeout 240 "$PY" benchmarks/bench_kernels.py --gpu-only --quick
exit "${status:-0}"
