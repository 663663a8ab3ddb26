"""import_tasks against the real database: idempotent, versioned, all or nothing."""

import pytest
from django.core.management import CommandError, call_command

from tasks.models import Task
from tasks.registry import builtin_tasks
from tests.tasks.test_registry import PROBLEM, make_checkout

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command("import_tasks", *args, stdout=out)
    return out.getvalue()


def test_builtin_import_is_idempotent():
    first = run("--builtin")
    count = len(builtin_tasks())
    assert f"{count} created" in first
    assert Task.objects.filter(suite="builtin", is_current=True).count() == count
    second = run("--builtin")
    assert f"0 created, 0 new version(s), {count} unchanged" in second
    assert Task.objects.filter(suite="builtin").count() == count
    relu = Task.objects.get(suite="builtin", level__number=1, problem_id=9)
    assert relu.name == "9_ReLU"
    assert relu.cpu_source
    assert relu.version == 1


def test_a_changed_problem_gets_a_new_version_and_the_old_one_stays(tmp_path):
    checkout = make_checkout(tmp_path, {"level1/19_ReLU.py": PROBLEM, "level2/3_Other.py": PROBLEM})
    run(str(checkout))
    old = Task.objects.get(suite="kernelbench", level__number=1, problem_id=19)
    (checkout / "KernelBench" / "level1" / "19_ReLU.py").write_text(PROBLEM + "# a comment only\n")
    assert "2 unchanged" in run(str(checkout))  # comments do not change KernelBench's hash
    (checkout / "KernelBench" / "level1" / "19_ReLU.py").write_text(PROBLEM.replace("4, 4", "8, 8"))
    assert "1 new version(s), 1 unchanged" in run(str(checkout))
    versions = Task.objects.filter(suite="kernelbench", level__number=1, problem_id=19).order_by("version")
    assert [(t.version, t.is_current) for t in versions] == [(1, False), (2, True)]
    assert versions[0].pk == old.pk
    assert versions[0].content_hash == old.content_hash
    assert versions[1].content_hash != old.content_hash


def test_a_bad_checkout_stores_nothing(tmp_path):
    checkout = make_checkout(tmp_path, {"level1/1_Good.py": PROBLEM, "level1/2_Bad.py": "x = 1\n"})
    with pytest.raises(CommandError, match="defines no Model"):
        run(str(checkout))
    assert not Task.objects.filter(suite="kernelbench").exists()


def test_the_command_needs_exactly_one_source(tmp_path):
    with pytest.raises(CommandError, match="either"):
        run()
    with pytest.raises(CommandError, match="either"):
        run(str(tmp_path), "--builtin")
