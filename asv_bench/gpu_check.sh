#!/usr/bin/env bash
# One-shot GPU check for the CUDA backend, for a machine with a GPU:
#   bash asv_bench/gpu_check.sh            # tests + quick roofline (a few minutes)
#   FULL=1 bash asv_bench/gpu_check.sh     # tests + full roofline
# Writes its logs under ${OUT:-gpu_check_out}/. It installs nothing: the GPU machine may
# have no network. It needs numba, numba-cuda, numpy, scipy, pytest, pytest-xdist and
# hypothesis in ${PYTHON:-python3} (torch and CuPy are compared when present); numsoft
# itself is imported from this checkout.
set -u
cd "$(dirname "$0")/.."
OUT_DIR="${OUT:-gpu_check_out}"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT_DIR"
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    "$PY" -c "import sys, numba, numpy; print(sys.version); print('numba', numba.__version__, 'numpy', numpy.__version__)"
    "$PY" -c "import numba_cuda; print('numba-cuda', numba_cuda.__version__)"
    "$PY" -c "from numba import cuda; cuda.detect()"
} 2>&1 | tee "$OUT_DIR/gpu.txt"
if ! "$PY" -c "import numba_cuda, pytest, xdist, hypothesis, scipy" 2>/dev/null; then
    echo "gpu_check: a needed package is missing (see above); carry it as a wheel" | tee -a "$OUT_DIR/gpu.txt"
    exit 2
fi

echo "== CUDA tests on the GPU (tiny launch constants + production sizes)"
NUMSOFT_TEST_CUDA=1 timeout 420 "$PY" -m pytest tests/cuda tests/test_cuda_ptx.py \
    tests/test_cuda_frontend.py -q -n 8 -p no:cacheprovider 2>&1 | tee "$OUT_DIR/tests.txt"
tests_rc=${PIPESTATUS[0]}

echo "== roofline"
if [ "${FULL:-0}" = "1" ]; then quick=""; else quick="--quick"; fi
timeout 300 "$PY" asv_bench/gpu_roofline.py $quick --json "$OUT_DIR/roofline.json" 2>&1 \
    | tee "$OUT_DIR/roofline.md"
roof_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc roofline rc=$roof_rc"
exit $(( tests_rc != 0 || roof_rc != 0 ))
