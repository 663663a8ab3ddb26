#!/usr/bin/env bash
# GPU validation, second device call: the gpu-marked tests (without Django), then agreement with
# KernelBench's own harness (its package copied into /.kb/, which git ignores; carry .kb). Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 OUT="${OUT:-/tmp/gpu-tests}"
mkdir -p "$OUT"
{
  echo "=== gpu tests ($(date -u +%H:%M:%S))"
  timeout 380 python3 -m pytest --noconftest -c bench/evaluator_gpu_pytest.ini --rootdir . -v \
    tests/evaluator/test_gpu.py
  echo "=== agreement with KernelBench ($(date -u +%H:%M:%S))"
  timeout 180 python3 bench/evaluator_agreement.py .kb "$OUT/agreement.json" \
    tasks/builtin/level1/1_Square_matrix_multiplication.py:tests/evaluator/kernels/honest_torch_matmul.py \
    tasks/builtin/level1/9_ReLU.py:tests/evaluator/kernels/honest_triton_relu.py:triton \
    tasks/builtin/level1/9_ReLU.py:tests/evaluator/kernels/adv_return_input.py \
    tasks/builtin/level1/3_Softmax_wide.py:tests/evaluator/kernels/adv_constant_zeros.py \
    tasks/builtin/level2/8_Matmul_Divide_Clamp_Residual.py:tests/evaluator/kernels/honest_cuda_fused_epilogue.py
  echo "=== done ($(date -u +%H:%M:%S))"
} 2>&1 | tee "$OUT/gpu-tests.log"
