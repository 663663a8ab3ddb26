"""The harness package imports nothing of Django, RQ or the site: every module of `evaluator` is imported in a
fresh interpreter where importing any of them fails."""

import subprocess
import sys

from django.conf import settings

BLOCKED = ("django", "rq", "django_rq", "leaderboard", "redis")

IMPORT_EVERY_MODULE = """
import importlib, importlib.abc, pkgutil, sys

BLOCKED = set({blocked!r})


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is blocked: the evaluator must not import it")
        return None


sys.meta_path.insert(0, Blocker())
import evaluator

names = sorted(info.name for info in pkgutil.walk_packages(evaluator.__path__, "evaluator."))
for name in names:
    importlib.import_module(name)
leaked = sorted({{module.split(".")[0] for module in sys.modules}} & BLOCKED)
assert not leaked, leaked
print(len(names), "modules")
"""


def test_every_evaluator_module_imports_without_django_rq_or_the_site():
    script = IMPORT_EVERY_MODULE.format(blocked=BLOCKED)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(settings.BASE_DIR)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    count = int(done.stdout.split()[0])
    assert count >= 20  # the package's modules were found, not an empty walk


def test_the_blocker_really_blocks():
    """The same script fails when a module it imports is blocked: the test above can fail."""
    script = IMPORT_EVERY_MODULE.format(blocked=(*BLOCKED, "json"))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    assert "json is blocked" in done.stderr
