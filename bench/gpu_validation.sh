#!/usr/bin/env bash
# The project's GPU validation on an H200 host, in stages; name several to run them in one device call:
#   bash bench/gpu_validation.sh prebuild    # every CUDA kernel of the tests and the bundle, built in parallel
#   bash bench/gpu_validation.sh tests       # the gpu-marked evaluator and hardening tests (no Django),
#                                            # after prebuild when its builds are not there yet
#   bash bench/gpu_validation.sh pipeline    # the 10-kernel bundle through the submission pipeline (carry .whl)
#   bash bench/gpu_validation.sh agreement   # KernelBench's own harness beside ours (carry .kb)
#   bash bench/gpu_validation.sh batch       # the 20-kernel batch cold then cached, and the timing spread
#   bash bench/gpu_validation.sh quick       # a sandbox probe and the hardening GPU tests only
# Builds go to one cache (/tmp/kb-gpu-work/cache), so a later stage on the same machine loads them; a stage
# on a fresh machine builds what it needs. Everything is written under a work folder and comes back as
# $OUT/<stage>.log and $OUT/<stage>.tgz (the device tool returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
RETURN="${OUT:-/tmp/gpu-validation-out}"
export PYTHONUNBUFFERED=1 OUT=/tmp/gpu-validation EVALUATOR_WORK_DIR=/tmp/kb-gpu-work
export EVALUATOR_CACHE_DIR=$EVALUATOR_WORK_DIR/cache
mkdir -p "$OUT" "$RETURN" "$EVALUATOR_CACHE_DIR"
log() { echo "=== $* ($(date -u +%H:%M:%S))"; }

environment() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv
  nvcc --version | tail -2
  python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda, triton.__version__)"
  python3 -c "import evaluator; print('harness', evaluator.HARNESS_VERSION)"
}

probe() {  # a Triton and a PyTorch kernel through the harness: 0 when both are correct
  local out="$OUT/probe" ok=0
  mkdir -p "$out"
  for kernel in honest_triton_relu honest_torch_matmul; do
    local task=tasks/builtin/level1/9_ReLU.py
    [ "$kernel" = honest_torch_matmul ] && task=tasks/builtin/level1/1_Square_matrix_multiplication.py
    timeout 150 python3 -m evaluator run --task "$task" --kernel "tests/evaluator/kernels/$kernel.py" \
      --device cuda --json "$out/$kernel.json" || ok=1
    python3 - "$out/$kernel.json" <<'PY' || ok=1
import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[1], "correct" if r["correct"] else f"NOT correct: {r['error']}", r["speedup"],
      [f["code"] for f in r["flags"]], "sandbox:", json.dumps(r["environment"].get("sandbox"))[:1500])
sys.exit(0 if r["correct"] else 1)
PY
  done
  return $ok
}

prebuild() {
  log environment
  environment
  log "CUDA kernels built ahead"
  timeout "${PREBUILD_S:-150}" python3 bench/gpu_prebuild.py "$EVALUATOR_CACHE_DIR"
  log done
}

tests() {  # EVALUATOR_K / HARDENING_K: pytest -k expressions to run part of either file
  [ -d "$EVALUATOR_CACHE_DIR/ext" ] || prebuild
  log "evaluator gpu tests"
  timeout "${EVALUATOR_TESTS_S:-220}" python3 -m pytest --noconftest -c bench/evaluator_gpu_pytest.ini \
    --rootdir . -v --durations=0 ${EVALUATOR_K:+-k "$EVALUATOR_K"} tests/evaluator/test_gpu.py
  log "hardening gpu tests"
  # On a copy of the cache: these tests write builds back, and a pipeline may be loading from the original.
  rm -rf /tmp/kb-hardening-cache && cp -a "$EVALUATOR_CACHE_DIR" /tmp/kb-hardening-cache
  EVALUATOR_CACHE_DIR=/tmp/kb-hardening-cache HARDENING_GPU_OUT="$OUT/hardening" \
    timeout "${HARDENING_TESTS_S:-200}" python3 -m pytest --noconftest -c tests/hardening/gpu_pytest.ini \
    --rootdir . -m gpu -v --durations=0 ${HARDENING_K:+-k "$HARDENING_K"} tests/hardening
  log done
}

pipeline() {
  log environment
  environment
  log "submission pipeline, 10-kernel bundle (builds in $EVALUATOR_CACHE_DIR: $(ls "$EVALUATOR_CACHE_DIR/ext" 2>/dev/null | wc -l) prefix folders)"
  GPU_CHECK_DEADLINE_S=${GPU_CHECK_DEADLINE_S:-400} OUT="$OUT/pipeline" bash bench/submissions_gpu_check.sh
  log done
}

agreement() {
  log "agreement with KernelBench's own harness"
  timeout "${AGREEMENT_S:-200}" python3 bench/evaluator_agreement.py .kb "$OUT/agreement.json" \
    tasks/builtin/level1/1_Square_matrix_multiplication.py:tests/evaluator/kernels/honest_torch_matmul.py \
    tasks/builtin/level1/9_ReLU.py:tests/evaluator/kernels/honest_triton_relu.py:triton \
    tasks/builtin/level1/9_ReLU.py:tests/evaluator/kernels/adv_return_input.py \
    tasks/builtin/level1/3_Softmax_wide.py:tests/evaluator/kernels/adv_constant_zeros.py \
    tasks/builtin/level2/8_Matmul_Divide_Clamp_Residual.py:tests/evaluator/kernels/honest_cuda_fused_epilogue.py
  log done
}

batch() {
  log environment
  environment
  log "20-kernel batch: cold cache, then cached"
  timeout "${BATCH_S:-480}" python3 bench/evaluator_batch_walltime.py "$OUT/batch" cuda
  log "timing spread"
  timeout "${SPREAD_S:-100}" python3 bench/evaluator_timing_spread.py \
    tasks/builtin/level2/8_Matmul_Divide_Clamp_Residual.py tests/evaluator/kernels/honest_cuda_fused_epilogue.py \
    --device cuda --repeats 5 --cache-dir "$EVALUATOR_CACHE_DIR"
  log done
}

quick() {  # the sandbox probe, then the hardening GPU tests, within a short device call
  log "sandbox probe, every layer the host allows"
  probe
  log "hardening gpu tests"
  HARDENING_GPU_OUT="$OUT/hardening" timeout "${QUICK_TESTS_S:-170}" python3 -m pytest --noconftest \
    -c tests/hardening/gpu_pytest.ini --rootdir . -m gpu -v tests/hardening
  log done
}

[ $# -gt 0 ] || { echo "stages: prebuild, tests, pipeline, agreement, batch or quick" >&2; exit 2; }
for stage in "$@"; do
  "$stage" 2>&1 | tee "$RETURN/$stage.log"
  tar czf "$RETURN/$stage.tgz" --exclude=./batch/cache -C "$OUT" . 2>/dev/null
done
