"""python -m tasks cpu LEVEL NAME: write a built-in problem's CPU-sized variant to a file, print its path."""

import argparse
import sys

from tasks.registry import cpu_task_file


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tasks", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    cpu = commands.add_parser("cpu", help="the CPU-sized variant of a built-in problem, as a file")
    cpu.add_argument("level", type=int, help="1, 2 or 3")
    cpu.add_argument("name", help="the problem's file name without .py, e.g. 9_ReLU")
    args = parser.parse_args(argv)
    try:
        path = cpu_task_file(args.level, args.name)
    except StopIteration:
        parser.error(f"no built-in problem L{args.level}/{args.name}")
    sys.stdout.write(f"{path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
