#!/usr/bin/env bash
# One-shot GPU check for the CUDA backend, for a session that has a GPU:
#   bash asv_bench/gpu_check.sh            # tests + quick roofline (a few minutes)
#   FULL=1 bash asv_bench/gpu_check.sh     # tests + full roofline
# Writes its logs under ${OUT:-gpu_check_out}/. Needs numba-cuda (pip install "numba-cuda[cu13]").
set -u
cd "$(dirname "$0")/.."
OUT_DIR="${OUT:-gpu_check_out}"
mkdir -p "$OUT_DIR"
python -c "import numba_cuda" 2>/dev/null || pip install -q "numba-cuda[cu13]" hypothesis pytest scipy
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$OUT_DIR/gpu.txt"
python -c "from numba import cuda; cuda.detect()" 2>&1 | tee -a "$OUT_DIR/gpu.txt"

echo "== CUDA tests on the GPU (tiny launch constants + production sizes)"
NUMSOFT_TEST_CUDA=1 timeout 420 python -m pytest tests/cuda tests/test_cuda_ptx.py \
    tests/test_cuda_frontend.py -q -p no:cacheprovider 2>&1 | tee "$OUT_DIR/tests.txt"
tests_rc=${PIPESTATUS[0]}

echo "== roofline"
if [ "${FULL:-0}" = "1" ]; then quick=""; else quick="--quick"; fi
timeout 300 python asv_bench/gpu_roofline.py $quick --json "$OUT_DIR/roofline.json" 2>&1 \
    | tee "$OUT_DIR/roofline.md"
roof_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc roofline rc=$roof_rc"
exit $(( tests_rc != 0 || roof_rc != 0 ))
