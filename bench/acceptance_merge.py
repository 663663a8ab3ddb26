"""One acceptance table from several runs of bench/evaluator_acceptance.py (successive device calls, each
with --skip of the ones before it).

    python bench/acceptance_merge.py OUT_DIR RUN1/acceptance.json RUN2/acceptance.json ...

A problem judged in several runs keeps its latest row; problems a run did not reach count only where no run
judged them. Writes OUT_DIR/acceptance.json and acceptance.md (the same table and summary as one run).
Needs neither torch nor a GPU.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.evaluator_acceptance import NOT_RUN, problem_key, summary, write_report  # noqa: E402

logger = logging.getLogger("bench.acceptance_merge")


def merged_rows(reports: list[dict]) -> list[dict]:
    """Every problem once: the latest run's verdict where any run judged it, else a 'not run' row."""
    rows: dict[str, dict] = {}
    for report in reports:
        for row in report["rows"]:
            if row["verdict"] != NOT_RUN or row["problem"] not in rows:
                rows[row["problem"]] = row
    return sorted(rows.values(), key=lambda row: problem_key(row["problem"]))


def main(out: Path, sources: list[Path]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    reports = [json.loads(path.read_text()) for path in sources]
    rows = merged_rows(reports)
    out.mkdir(parents=True, exist_ok=True)
    write_report(out, rows, {"runs": [str(path) for path in sources]})
    logger.info("%s", json.dumps(summary(rows)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), [Path(arg) for arg in sys.argv[2:]]))
