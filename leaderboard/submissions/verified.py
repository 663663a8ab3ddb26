"""A completed run's per-task results into verified scores on its entry, through leaderboard.scoring.

Sample 0 alone ranks, and the rates are over every task of the suite's level (a missing one counts as a
miss). Scores are written for both baselines (eager and torch.compile) where the run measured them, keyed
by the run (and so by harness version): a re-verification adds scores, it never overwrites an older run's.
A kernel the harness flagged as a hack counts as incorrect; any suspect or hack flag marks the scores
'flagged' for review. Each score records its suite and lane: a GPU run over the ranking suite (KernelBench)
ranks; another suite or CPU timing is the separate lane, which tables show only when asked. Once written, the
entry is paired with its method's reported entry on the level (leaderboard.pairing).
"""

from leaderboard import pairing, scoring
from leaderboard.models import Baseline, CurationState, Metric, Provenance, Score, TaskResult
from tasks.models import Task

CPU_NOTE = "CPU timing (host clock): not a GPU verification."
SEPARATE_NOTE = "Separate lane ({why}): does not rank among full-suite results (shown with lane=separate)."
BASELINE_FIELDS = {Baseline.EAGER: "speedup_eager", Baseline.COMPILE: "speedup_compile"}


def ranked_results(run) -> list[TaskResult]:
    """The run's sample-0 results, one per task."""
    return list(TaskResult.objects.filter(run=run, kernel__sample=0).select_related("task"))


def denominator(run, results: list[TaskResult]) -> int:
    """The tasks the rates are over: the current tasks of the suite's level (see scoring.rate_denominator)."""
    level_tasks = Task.objects.level_count(run.submission.suite, run.submission.entry.level.number)
    return scoring.rate_denominator(level_tasks, results)


def outcomes(results: list[TaskResult], baseline: str) -> list[scoring.TaskOutcome]:
    field = BASELINE_FIELDS[baseline]
    return [scoring.task_outcome(r.correct, getattr(r, field), r.flags) for r in results]


def measured(results: list[TaskResult], baseline: str) -> bool:
    """Whether the run timed this baseline at all (a CPU run may lack torch.compile timings)."""
    field = BASELINE_FIELDS[baseline]
    return any(getattr(r, field) is not None for r in results)


def review_state(results: list[TaskResult]) -> tuple[str, str]:
    """(curation state, reason): flagged when the harness raised a suspect or hack flag on any kernel."""
    flagged = sorted(
        {
            f"{r.task.key}: {flag.get('code', '?')} ({flag.get('severity')})"
            for r in results
            for flag in r.flags
            if flag.get("severity") in {"suspect", "hack"}
        }
    )
    if not flagged:
        return CurationState.VISIBLE, ""
    return CurationState.FLAGGED, "harness flags to review: " + "; ".join(flagged)


def score_notes(run, results: list[TaskResult], n_tasks: int) -> str:
    suite = run.submission.suite
    notes = [
        f"{len(results)} of {n_tasks} tasks of the {suite} suite submitted; harness {run.harness_version}, "
        f"{run.mode} mode."
    ]
    if run.is_cpu_only:
        notes.append(CPU_NOTE)
    reasons = scoring.separate_lane_reasons(suite, run.device)
    if reasons:
        notes.append(SEPARATE_NOTE.format(why="; ".join(reasons)))
    degenerate = sum(1 for r in results if r.degenerate)
    if degenerate:
        notes.append(f"{degenerate} task(s) accept a null kernel (degenerate).")
    return " ".join(notes)


def write_scores(run) -> list[Score]:
    """Aggregate a run into verified Score rows (idempotent for the same run); return them."""
    submission = run.submission
    entry = submission.entry
    results = ranked_results(run)
    n_tasks = denominator(run, results)
    state, state_reason = review_state(results)
    notes = score_notes(run, results, n_tasks)
    metrics = set(Metric.objects.values_list("id", flat=True))
    written = []
    for baseline in BASELINE_FIELDS:
        if not results or not measured(results, baseline):
            continue
        for aggregate in scoring.aggregate(outcomes(results, baseline), n_tasks).values():
            if aggregate.value is None or aggregate.metric_id not in metrics:
                continue
            score, _ = Score.objects.update_or_create(
                entry=entry,
                metric_id=aggregate.metric_id,
                run=run,
                baseline=baseline,
                provenance=Provenance.VERIFIED,
                defaults={
                    **aggregate.score_fields(),
                    "harness_version": run.harness_version,
                    "n_tasks": n_tasks,
                    "suite": submission.suite,
                    "lane": scoring.lane(submission.suite, run.device),
                    "notes": notes,
                    "state": state,
                    "state_reason": state_reason,
                },
            )
            written.append(score)
    if written:
        pairing.pair_entry(entry)
    return written


def fast_p_of_run(run, p: float, baseline: str = Baseline.EAGER) -> float:
    """fast_p for any p from a run's stored per-task speedups (KernelBench's strict >)."""
    results = ranked_results(run)
    return scoring.fast_p(outcomes(results, baseline), p, denominator(run, results))
