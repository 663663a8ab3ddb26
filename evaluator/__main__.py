"""``python -m evaluator``: the command line (run one kernel, or a batch from a manifest)."""

import sys

from evaluator.cli import main

if __name__ == "__main__":
    sys.exit(main())
