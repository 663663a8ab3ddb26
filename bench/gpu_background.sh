#!/usr/bin/env bash
# Stages of bench/gpu_validation.sh that outlast one device call (a 100-task pipeline: about 950 s), run in the
# background on the GPU host across calls to one warm machine:
#   bash bench/gpu_background.sh start NAME STAGE...   # copy the tree, start the stages under setsid, return
#   bash bench/gpu_background.sh wait NAME [SECONDS]   # wait until they end (at most SECONDS, default 540),
#                                                      # then copy what they wrote back to $OUT
# The variables the stages read (BUNDLE_PROBLEMS, PIPELINE_BUDGET_MS, …) are passed at `start`. Everything
# lives under /tmp/gpu-bg/NAME: the tree's copy (so later calls may carry another tree), the stages' work
# folders and their returned files. `wait` prints "NAME: ended" or "NAME: still running" and the log's tail;
# its files come back as NAME-<file> (a stage's log and archive), at most 8 a call in all.
set -uo pipefail
cd "$(dirname "$0")/.."
action=${1:-}
name=${2:-}
[ -n "$action" ] && [ -n "$name" ] || { sed -n '2,10p' "$0" >&2; exit 2; }
home=/tmp/gpu-bg/$name

running() { [ -f "$home/pid" ] && kill -0 "$(cat "$home/pid")" 2>/dev/null; }

case "$action" in
  start)
    shift 2
    [ $# -gt 0 ] || { echo "start: name the stages" >&2; exit 2; }
    running && { echo "$name: already running" >&2; exit 1; }
    rm -rf "$home" && mkdir -p "$home/tree" "$home/ret"
    cp -a . "$home/tree/"
    (
      cd "$home/tree" || exit 1
      GPU_VALIDATION_DIR=$home/out GPU_VALIDATION_WORK=$home/work OUT=$home/ret \
        setsid bash bench/gpu_validation.sh "$@" >"$home/log" 2>&1 </dev/null &
      echo $! >"$home/pid"
    )
    echo "$name: started ($*), pid $(cat "$home/pid")"
    ;;
  wait)
    limit=${3:-540}
    [ -d "$home" ] || { echo "$name: never started" >&2; exit 1; }
    waited=0
    while running && [ "$waited" -lt "$limit" ]; do sleep 5; waited=$((waited + 5)); done
    if running; then echo "$name: still running after ${waited} s"; else echo "$name: ended"; fi
    tail -20 "$home/log"
    if [ -n "${OUT:-}" ]; then
      mkdir -p "$OUT"
      cp "$home/log" "$OUT/$name-background.log"
      for file in "$home"/ret/*; do [ -f "$file" ] && cp "$file" "$OUT/$name-$(basename "$file")"; done
    fi
    ! running
    ;;
  *)
    echo "unknown action: $action (start or wait)" >&2
    exit 2
    ;;
esac
