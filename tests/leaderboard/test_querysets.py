"""The domain rules the models' querysets and managers carry: which scores show and rank, which tasks are
current and how many a level has, which kernels a run evaluates, and methods found or made by name."""

import pytest

from leaderboard import scoring
from leaderboard.models import CurationState, Method, Score
from tasks.models import Task
from tests.leaderboard import factories

pytestmark = pytest.mark.django_db


def test_scores_shown_rankable_verified_and_shown_verified():
    entry = factories.entry("Curated")
    states = {
        state: factories.reported(entry, "fast_1", 10.0, factories.source(state), state=state)
        for state in CurationState.values
    }
    run = factories.verified_run(entry, [(True, 2.0, 0.5), (False, None, None)])
    verified = Score.objects.filter(run=run)
    scores = Score.objects.filter(entry=entry)

    assert set(scores.reported().shown()) == {states["visible"], states["flagged"], states["hacked"]}
    assert set(scores.reported().rankable()) == {states["visible"], states["flagged"]}
    assert set(scores.verified()) == set(verified)
    assert set(scores.reported()) == set(states.values())
    assert set(scores.shown_verified()) == set(verified.filter(baseline="eager"))
    assert verified.filter(baseline="compile").exists()

    verified.filter(metric_id="fast_1").update(state=CurationState.HACKED)
    assert not scores.shown_verified().filter(metric_id="fast_1").exists()
    assert set(scores.rankable().values_list("state", flat=True)) == set(scoring.RANKABLE_STATES)


def test_current_tasks_of_a_suite_and_the_count_of_a_level():
    factories.tasks(2, 3, suite="test")  # level 2, problems 1..3
    factories.tasks(1, 2, suite="test")
    retired = Task.objects.get(suite="test", level__number=2, problem_id=3)
    retired.is_current = False
    retired.save()

    assert Task.objects.level_count("test", 2) == 2
    assert Task.objects.level_count("test", 1) == 2
    assert Task.objects.level_count("other", 2) == 0
    assert set(Task.objects.current("test").values_list("level__number", "problem_id")) == {
        (1, 1),
        (1, 2),
        (2, 1),
        (2, 2),
    }
    assert retired not in Task.objects.current()


def test_a_run_evaluates_sample_zero_unless_it_takes_every_sample():
    entry = factories.entry("Sampled")
    run = factories.verified_run(entry, [(True, 1.5, 1.0), (True, 0.5, 0.4)], extra_samples=2)
    assert run.kernels_in_scope().count() == 2
    assert set(run.kernels_in_scope().values_list("sample", flat=True)) == {0}
    run.all_samples = True
    assert run.kernels_in_scope().count() == 6
    assert run.submission.kernels.in_scope(all_samples=False).count() == 2


def test_methods_are_found_by_name_in_any_case_and_get_unique_slugs():
    first, created = Method.objects.get_or_create_by_name("  Kernel Agent ", kind="agent")
    assert created
    assert (first.name, first.slug, first.kind) == ("Kernel Agent", "kernel-agent", "agent")
    again, created = Method.objects.get_or_create_by_name("kernel AGENT", kind="llm")
    assert (again, created) == (first, False)
    assert again.kind == "agent"  # an existing method keeps its fields
    assert Method.objects.named(" KERNEL agent") == first
    assert Method.objects.named("Kernel Agents") is None

    second, _ = Method.objects.get_or_create_by_name("Kernel-Agent")  # another name, the same slug
    third, _ = Method.objects.get_or_create_by_name("kernel agent!")
    assert (second.slug, third.slug) == ("kernel-agent-2", "kernel-agent-3")
    unnamed, _ = Method.objects.get_or_create_by_name("???")
    assert unnamed.slug == "method"
    longest, _ = Method.objects.get_or_create_by_name("x" * 120)
    assert longest.slug == "x" * 120
