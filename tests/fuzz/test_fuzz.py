"""Damage a copy of the demo results at random and use it as a user would.

Each example copies the committed `results/` (7 runs), applies one to three damages drawn
from `damage.py` (truncation, garbage bytes, wrong types, missing and extra files,
symlinks, folders where files belong, huge values, hostile names) and then:

- opens every dashboard page (AppTest), with the URL's defaults or with `run`, `runs`,
  `baseline` and `question` pointing at the damaged run: no exception, the damaged run
  named in a warning when a reader can tell, every healthy run still listed and pickable,
  no warning line of unbounded length, no link or image drawn from file contents;
- runs `rageval check|compare|calibrate|report` on the damaged and healthy runs: exit
  0/1/2, no traceback, one bounded error line naming the run or file, and a command that
  involves only healthy runs prints exactly what it prints on the undamaged results.

CI runs a few dozen examples; `bench/fuzz_long.py` runs thousands.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, note
from hypothesis import strategies as st

from tests.fuzz.damage import damages
from tests.fuzz.harness import COMMANDS, examine_cli, examine_dashboard, fuzz_settings


@fuzz_settings(ci=10)
@given(items=damages(), point_at_damage=st.booleans())
def test_every_page_survives_damage(items, point_at_damage):
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-") as d:
        findings = examine_dashboard(Path(d), items, point_at_damage)
    note("\n".join(findings))
    assert findings == []


@fuzz_settings(ci=25)
@given(
    items=damages(),
    commands=st.lists(st.sampled_from(COMMANDS), min_size=1, max_size=3, unique=True),
)
def test_every_command_survives_damage(items, commands):
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-") as d:
        findings = examine_cli(Path(d), items, commands)
    assert findings == []
