#!/usr/bin/env bash
# The project's GPU validation on an H200 host, in stages; name several to run them in one device call:
#   bash bench/gpu_validation.sh probe        # the environment, and a Triton and a PyTorch kernel through the sandbox
#   bash bench/gpu_validation.sh prebuild     # every CUDA kernel of the tests and the bundles, built in parallel
#   bash bench/gpu_validation.sh tests        # the gpu-marked evaluator tests (the whole corpus on full-size tasks)
#   bash bench/gpu_validation.sh hardening    # the gpu-marked hardening tests (HARDENING_K: a pytest -k filter)
#   bash bench/gpu_validation.sh acceptance   # identity candidates over KernelBench's problems, ours and KernelBench's
#                                             # harness (carry .kb: KernelBench/ and its kernelbench package)
#   bash bench/gpu_validation.sh pipeline     # a KernelBench bundle through the site, queue and worker (carry .whl, .kb)
#   bash bench/gpu_validation.sh short        # short-kernel timing: ours, KernelBench's and do_bench (carry .kb)
#   bash bench/gpu_validation.sh speed        # a cold load_inline bundle: our batch against KernelBench's harness
#                                             # (SPEED_PASSES=cold,kernelbench then =cached: two calls, one machine)
#   bash bench/gpu_validation.sh onepass      # one-pass fingerprints: cost against the torch path, and Triton
#                                             # kernels (honest, launch-hooked) judged with the kernel prepared
#   bash bench/gpu_validation.sh rounds       # launch-bound identity candidates, rounds of 20 calls and rounds
#                                             # sized by time side by side (ROUNDS_PROBLEMS, ROUNDS_SIZES,
#                                             # ROUNDS_REPEATS; carry .kb)
# Builds go to one cache (/tmp/kb-gpu-work/cache), so a later stage on the same machine loads them. Everything is
# written under a work folder and comes back as $OUT/<stage>.log and $OUT/<stage>.tgz (at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
RETURN="${OUT:-/tmp/gpu-validation-out}"
# GPU_VALIDATION_DIR and GPU_VALIDATION_WORK move the work folders, so a stage can run in the background beside another.
export PYTHONUNBUFFERED=1 OUT=${GPU_VALIDATION_DIR:-/tmp/gpu-validation} EVALUATOR_WORK_DIR=${GPU_VALIDATION_WORK:-/tmp/kb-gpu-work}
export EVALUATOR_CACHE_DIR=$EVALUATOR_WORK_DIR/cache
mkdir -p "$OUT" "$RETURN" "$EVALUATOR_CACHE_DIR"
log() { echo "=== $* ($(date -u +%H:%M:%S))"; }

environment() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv
  nvcc --version | tail -2
  python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda, triton.__version__)"
  python3 -c "import evaluator; print('harness', evaluator.HARNESS_VERSION)"
  nproc; free -g | head -2
}

probe() {  # a Triton and a PyTorch kernel through the harness: 0 when both are correct
  log environment
  environment
  local out="$OUT/probe" ok=0
  mkdir -p "$out"
  for kernel in honest_triton_relu honest_torch_matmul; do
    local task=tasks/builtin/level1/9_ReLU.py
    [ "$kernel" = honest_torch_matmul ] && task=tasks/builtin/level1/1_Square_matrix_multiplication.py
    timeout 200 python3 -m evaluator run --task "$task" --kernel "tests/evaluator/kernels/$kernel.py" \
      --device cuda --json "$out/$kernel.json" || ok=1
    python3 - "$out/$kernel.json" <<'PY' || ok=1
import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[1], "correct" if r["correct"] else f"NOT correct: {r['error']}", r["speedup"], r["durations_s"],
      [f["code"] for f in r["flags"]], "sandbox:", json.dumps(r["environment"].get("sandbox"))[:1500])
sys.exit(0 if r["correct"] else 1)
PY
  done
  return $ok
}

prebuild() {
  log "CUDA kernels built ahead"
  timeout "${PREBUILD_S:-150}" python3 bench/gpu_prebuild.py "$EVALUATOR_CACHE_DIR"
  log done
}

tests() {
  log "evaluator gpu tests"
  GPU_TESTS_OUT="$OUT/gpu-corpus" timeout "${EVALUATOR_TESTS_S:-420}" python3 -m pytest --noconftest -c bench/evaluator_gpu_pytest.ini \
    --rootdir . -v --durations=0 ${EVALUATOR_K:+-k "$EVALUATOR_K"} tests/evaluator/test_gpu.py
  log done
}

hardening() {
  log "hardening gpu tests"
  rm -rf /tmp/kb-hardening-cache && cp -a "$EVALUATOR_CACHE_DIR" /tmp/kb-hardening-cache
  EVALUATOR_CACHE_DIR=/tmp/kb-hardening-cache HARDENING_GPU_OUT="$OUT/hardening" \
    timeout "${HARDENING_TESTS_S:-300}" python3 -m pytest --noconftest -c tests/hardening/gpu_pytest.ini \
    --rootdir . -m gpu -v --durations=0 ${HARDENING_K:+-k "$HARDENING_K"} tests/hardening
  log done
}

acceptance() {
  log "acceptance: identity candidates over KernelBench's problems"
  timeout "${ACCEPTANCE_S:-480}" python3 bench/evaluator_acceptance.py .kb "$OUT/acceptance" \
    --per-level "${PER_LEVEL:-20}" --largest "${LARGEST:-8}" --kernelbench-src .kb --compare "${COMPARE:-30}" \
    --budget-s "$(( ${ACCEPTANCE_S:-480} - 20 ))" ${ACCEPTANCE_PROBLEMS:+--problems "$ACCEPTANCE_PROBLEMS"} \
    ${ACCEPTANCE_BUDGET_MS:+--timing-budget-ms "$ACCEPTANCE_BUDGET_MS"} ${ACCEPTANCE_SKIP:+--skip "$ACCEPTANCE_SKIP"}
  cat "$OUT/acceptance/acceptance.md" 2>/dev/null | tail -30
  python3 bench/round_first_calls.py "$OUT/acceptance/out" 2>&1 | tail -1
  python3 bench/round_spells.py "$OUT/acceptance/out" 2>&1 | tail -1
  log done
}

pipeline() {  # BUNDLE_LEVEL, BUNDLE_PROBLEMS; PIPELINE_BUDGET_MS: the worker's timing budget
  log "pipeline: a KernelBench level-${BUNDLE_LEVEL:-2} bundle through the site"
  python3 bench/kernelbench_bundle.py .kb "$OUT/kb-bundle" --level "${BUNDLE_LEVEL:-2}" --problems "${BUNDLE_PROBLEMS:-1-10}"
  [ -z "${PIPELINE_BUDGET_MS:-}" ] || export EVALUATOR_TIMING_BUDGET_MS=$PIPELINE_BUDGET_MS
  GPU_CHECK_BUNDLE="$OUT/kb-bundle" GPU_CHECK_KERNELBENCH=.kb GPU_CHECK_DEADLINE_S=${GPU_CHECK_DEADLINE_S:-400} \
    OUT="$OUT/pipeline" bash bench/submissions_gpu_check.sh
  log done
}

short() {
  log "short kernels: ours, KernelBench's and do_bench"
  timeout "${SHORT_S:-300}" python3 bench/evaluator_short_kernels.py .kb "$OUT/short_kernels.json"
  log done
}

onepass() {
  log "one-pass fingerprints: cost and agreement with the torch path"
  timeout 120 python3 bench/fingerprint_speed.py "$OUT/fingerprint_speed.json"
  log "Triton kernels judged with the one-pass kernel prepared in both children"
  local out="$OUT/onepass"
  mkdir -p "$out"
  for kernel in ${ONEPASS_KERNELS:-honest_triton_relu adv_triton_launch_hook honest_torch_matmul}; do
    local task=tasks/builtin/level1/9_ReLU.py
    [ "$kernel" = honest_torch_matmul ] && task=tasks/builtin/level1/1_Square_matrix_multiplication.py
    EVALUATOR_ONE_PASS_MIB=1 timeout 150 python3 -m evaluator run --task "$task" \
      --kernel "tests/evaluator/kernels/$kernel.py" --device cuda --json "$out/$kernel.json"
    python3 - "$out/$kernel.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[1], r["correct"], (r["error"] or {}).get("kind"), r["speedup"], r["durations_s"],
      [(f["code"], f["severity"], f["detail"][:200]) for f in r["flags"]])
PY
  done
  log done
}

speed() {
  log "speed: a cold bundle of load_inline kernels, ours against KernelBench's harness"
  timeout "${SPEED_S:-560}" python3 bench/evaluator_speed.py .kb "$OUT/speed" --level 2 --problems "${SPEED_PROBLEMS:-1-10}" \
    --passes "${SPEED_PASSES:-cold,kernelbench,cached}" ${SPEED_BUDGET_MS:+--timing-budget-ms "$SPEED_BUDGET_MS"}
  log done
}

rounds() {  # does finer alternation share the host's slow spells fairly between the two processes?
  log "launch-bound identity candidates: the speedup's spread per round size"
  mkdir -p "$OUT/rounds"
  for problem in ${ROUNDS_PROBLEMS:-3/9 3/10 3/16 3/19}; do
    local task
    task=$(ls .kb/KernelBench/level"${problem%/*}"/"${problem#*/}"_*.py | head -1)
    timeout "${ROUNDS_S:-120}" python3 bench/evaluator_timing_spread.py "$task" identity --repeats "${ROUNDS_REPEATS:-3}" \
      --round-calls "${ROUNDS_SIZES:-20,time}" --json "$OUT/rounds/${problem/\//_}.json"
  done
  log done
}

[ $# -gt 0 ] || { echo "stages: probe prebuild tests hardening acceptance pipeline short speed onepass rounds" >&2; exit 2; }
for stage in "$@"; do
  "$stage" 2>&1 | tee "$RETURN/$stage.log"
  tar czf "$RETURN/$stage.tgz" --exclude=./batch/cache --exclude='*/cache' --exclude='*.so' --exclude='*.o' \
    --exclude=./speed/ours-cache --exclude=./speed/kb-build -C "$OUT" . 2>/dev/null
done
