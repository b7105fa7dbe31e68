"""The long profile of the fuzz suite: thousands of damaged result folders, not dozens.

    .venv/bin/python bench/fuzz_long.py [--pages N] [--commands N] [--inputs N] [--seed S]

Runs `tests/fuzz/test_fuzz.py` with N examples per test (defaults 1,000 page examples and
3,000 command examples; a page example opens all seven pages, about 3 s each on two
cores) and `tests/fuzz/test_inputs.py` (label files, each importer's formats, judge
replies, the GitHub API's answers) with `--inputs` examples per door (default 2,000; 0
skips a part), `tests/fuzz/test_deadlines.py` (stalling judge servers, pipelines hanging
on any questions) with `--deadlines` examples each (default 200), and prints
Hypothesis' statistics: examples run, failures, and how often a
KNOWN_OPEN crash was tolerated. A failure prints its shrunk reproducer, the damage values
to pin in `tests/fuzz/test_found.py` once fixed. Exit code is pytest's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(test: str, examples: int, seed: str | None) -> int:
    if examples <= 0:
        return 0
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        test if "/" in test else f"tests/fuzz/test_fuzz.py::{test}",
        "-q",
        "-p",
        "no:cacheprovider",
        "--timeout=0",
        "--hypothesis-show-statistics",
    ]
    if seed:
        cmd.append(f"--hypothesis-seed={seed}")
    env = {**os.environ, "RAGEVAL_FUZZ_EXAMPLES": str(examples)}
    print(f"+ RAGEVAL_FUZZ_EXAMPLES={examples} {' '.join(cmd[1:])}", flush=True)
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000, help="page examples (1000)")
    parser.add_argument("--commands", type=int, default=3000, help="command examples (3000)")
    parser.add_argument("--inputs", type=int, default=2000, help="examples per input door")
    parser.add_argument(
        "--deadlines", type=int, default=200, help="examples per deadline test (200)"
    )
    parser.add_argument("--seed", help="Hypothesis seed, to repeat a run")
    args = parser.parse_args()
    codes = [
        run("tests/fuzz/test_inputs.py", args.inputs, args.seed),
        run("tests/fuzz/test_deadlines.py", args.deadlines, args.seed),
        run("test_every_command_survives_damage", args.commands, args.seed),
        run("test_every_page_survives_damage", args.pages, args.seed),
    ]
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
