#!/usr/bin/env bash
# GPU validation, first device call: environment, the 20-kernel batch (cold, then with the compile cache),
# and the timing spread. Logs go under $OUT (the log plus one archive of the result files).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 OUT="${OUT:-/tmp/gpu-check}"
mkdir -p "$OUT" /tmp/gc
log() { echo "=== $* ($(date -u +%H:%M:%S))"; }
{
  log environment
  date -u; nvidia-smi; nvcc --version | tail -2
  python3 -c "import torch, triton, sys; print(sys.version); print(torch.__version__, torch.version.cuda, triton.__version__, torch.cuda.get_device_name(0))"
  log "batch: cold then cached"
  timeout 450 python3 bench/evaluator_batch_walltime.py /tmp/gc/batch cuda
  log "timing spread"
  timeout 120 python3 bench/evaluator_timing_spread.py tasks/builtin/level2/8_Matmul_Divide_Clamp_Residual.py \
    tests/evaluator/kernels/honest_cuda_fused_epilogue.py --device cuda --repeats 5 --cache-dir /tmp/gc/batch/cache
  log done
} 2>&1 | tee "$OUT/gpu-check.log"
tar czf "$OUT/results.tgz" -C /tmp/gc batch/cold batch/warm 2>/dev/null
