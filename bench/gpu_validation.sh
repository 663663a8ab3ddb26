#!/usr/bin/env bash
# The project's GPU validation on an H200 host, in stages that fit one device call each:
#   bash bench/gpu_validation.sh pipeline   # sandbox probe (CUDA + Triton in every layer), then the 10-kernel
#                                           # bundle through the submission pipeline (needs .whl carried)
#   bash bench/gpu_validation.sh tests      # the gpu-marked hardening and evaluator tests (no Django)
#   bash bench/gpu_validation.sh quick      # the probe and the hardening GPU tests only
# If the probe fails with the full sandbox, each layer is turned off in turn to find the one that breaks
# CUDA, and the pipeline stage runs without it (reported). Everything is written under a work folder and
# comes back as $OUT/<stage>.log and $OUT/<stage>.tgz (the device tool returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
RETURN="${OUT:-/tmp/gpu-validation-out}"
export PYTHONUNBUFFERED=1 OUT=/tmp/gpu-validation
mkdir -p "$OUT" "$RETURN"
log() { echo "=== $* ($(date -u +%H:%M:%S))"; }
LAYERS="network pid root user landlock cgroup tmpfs"

probe() {  # a Triton and a PyTorch kernel through the harness: 0 when both are correct
  local out="$OUT/probe${1:+-$1}" ok=0
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

pipeline() {
  log environment
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda, triton.__version__)"
  log "sandbox probe, every layer"
  if ! probe; then
    for layer in $LAYERS; do
      log "sandbox probe without $layer"
      if EVALUATOR_SANDBOX_DISABLE=$layer probe "$layer"; then export EVALUATOR_SANDBOX_DISABLE=$layer; break; fi
    done
    log "pipeline runs with EVALUATOR_SANDBOX_DISABLE=${EVALUATOR_SANDBOX_DISABLE:-nothing found}"
  fi
  log "submission pipeline, 10-kernel bundle"
  GPU_CHECK_DEADLINE_S=${GPU_CHECK_DEADLINE_S:-400} OUT="$OUT/pipeline" bash bench/submissions_gpu_check.sh
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

tests() {
  log "hardening gpu tests"
  HARDENING_GPU_OUT="$OUT/hardening" timeout 300 python3 -m pytest --noconftest -c tests/hardening/gpu_pytest.ini \
    --rootdir . -m gpu -v tests/hardening
  log "evaluator gpu tests"
  timeout 260 python3 -m pytest --noconftest -c bench/evaluator_gpu_pytest.ini --rootdir . -v tests/evaluator/test_gpu.py
  log done
}

"${1:?stage: pipeline, tests or quick}" 2>&1 | tee "$RETURN/${1}.log"
tar czf "$RETURN/${1}.tgz" -C "$OUT" . 2>/dev/null
