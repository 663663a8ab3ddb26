"""Write the GPU check's report: every submission's verdicts, scores and environment, from the database.

Used by bench/submissions_gpu_check.sh: ``python3 bench/submissions_gpu_report.py OUT_DIR``.
"""

import json
import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

import django  # noqa: E402

django.setup()

from leaderboard.models import Score, Submission, TaskResult  # noqa: E402

logger = logging.getLogger("bench.gpu_report")


def result_row(result: TaskResult) -> dict:
    return {
        "task": result.task.key,
        "name": result.task.name,
        "backend": result.raw.get("kernel", {}).get("backend"),
        "compiled": result.compiled,
        "correct": result.correct,
        "error": result.error_kind,
        "error_message": result.error_message[-600:],
        "speedup_eager": result.speedup_eager,
        "speedup_compile": result.speedup_compile,
        "flags": result.flags,
        "durations_s": result.raw.get("durations_s"),
        "eager_ms": (result.raw.get("baseline_ms") or {}).get("eager"),
        "runtime_ms": result.raw.get("runtime_ms"),  # the candidate's samples: what its timed calls took
        "baseline_ms": result.raw.get("baseline_ms"),
        "resources": result.raw.get("resources"),  # bytes per call and each process's peaks
        "timing": result.raw.get("timing"),  # rounds_ms: where each side's rounds went
    }


def submission_report(submission: Submission) -> dict:
    run = submission.current_run
    results = TaskResult.objects.filter(run=run).select_related("task")
    scores = Score.objects.filter(run=run)
    return {
        "submission": submission.pk,
        "level": submission.entry.level.number,
        "status": submission.status,
        "reason": submission.reason,
        "done": submission.done,
        "total": submission.total,
        "device": run.device,
        "queue": run.queue,
        "attempts": run.attempts,
        "started": str(run.started),
        "finished": str(run.finished),
        "environment": run.environment,
        "results": [result_row(result) for result in results],
        "scores": {f"{s.metric_id}/{s.baseline}": [s.value, s.ci_low, s.ci_high, s.state] for s in scores},
    }


def main(out: Path) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    report = [submission_report(s) for s in Submission.objects.order_by("pk")]
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    for item in report:
        logger.info("submission %s L%s: %s %s/%s %s", item["submission"], item["level"], item["status"],
                    item["done"], item["total"], item["reason"][:300])  # fmt: skip
        for row in item["results"]:
            verdict = f"compiled={row['compiled']} correct={row['correct']} {row['error']}"
            speedups = f"eager={row['speedup_eager']} compile={row['speedup_compile']}"
            logger.info("  %-34s %-7s %s %s", row["name"], row["backend"], verdict, speedups)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
