"""Drive the real dashboard (AppTest) and the real `rageval` entry point on a damaged copy,
and say what went wrong as a list of findings (empty = the damage was handled)."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
from hypothesis import HealthCheck, currently_in_test_context, event, settings
from streamlit.testing.v1 import AppTest

from dashboard.pages import PAGES
from rageval_core.cli import main
from rageval_core.errors import shown
from rageval_core.links import escape_word, md_escape
from rageval_core.runs.layout import RESULTS_ENV
from tests.fuzz.damage import KNOWN_OPEN, Harm, apply_all, fresh_copy, healthy

ENTRY = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
MAX_LINE = 2_000  # no warning or error line echoes an unbounded value
RUN_PICKERS = ("diagnose_run", "tails_run", "retrieval_run", "question_run")
RUN_MULTI_PICKERS = ("compare_runs", "tails_runs", "retrieval_runs")
# The exact message of a known crash that many damages lead to; tolerated while its tag is
# in KNOWN_OPEN (any other crash, or this one once the tag is removed, fails the example).
KNOWN_MESSAGES = {"compare-empty-run": "cannot reshape array of size 0"}
VIEW_DOWN = "This view cannot be shown"  # streamlit_app's line for a RagevalError in a page
LABELS = str(Path(__file__).resolve().parents[2] / "rageval_core" / "example" / "labels.yaml")


@contextlib.contextmanager
def environment(results: Path, cache: Path) -> Iterator[None]:
    """RAGEVAL_RESULTS and a fresh XDG cache for one example; Streamlit caches cleared, so
    no store or query result of an earlier example can mask this one's damage."""
    saved = {k: os.environ.get(k) for k in (RESULTS_ENV, "XDG_CACHE_HOME")}
    os.environ[RESULTS_ENV] = str(results)
    os.environ["XDG_CACHE_HOME"] = str(cache)
    st.cache_data.clear()
    st.cache_resource.clear()
    try:
        yield
    finally:
        st.cache_resource.clear()  # the store of a folder about to be deleted
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def known_open(text: str, open_tags: Iterable[str]) -> str | None:
    """The open tag whose crash message `text` carries, if any."""
    for tag, message in KNOWN_MESSAGES.items():
        if tag in open_tags and message in text:
            if currently_in_test_context():  # counted in --hypothesis-show-statistics
                event(f"known open, tolerated: {tag}")
            return tag
    return None


def _texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


def _shows(text: str, name: str) -> bool:
    # how a name that is not a run id is displayed: escaped (`errors.shown`: its repr,
    # backticks as \x60), then Markdown-escaped in a banner or a message (`ui.say`)
    forms = (name, repr(name)[1:-1], shown(name)[1:-1])
    return any(n in text for f in forms for n in (f, md_escape(f), escape_word(f)))


def page_findings(
    at: AppTest, page: str, harms: Sequence[Harm], healthy: Sequence[str], open_tags: Iterable[str]
) -> list[str]:
    where = f"page {page} (params {dict(at.query_params)})"
    crashes = [str(e.value) for e in at.exception]
    out = [f"{where}: exception {c}" for c in crashes if not known_open(c, open_tags)]
    if crashes:
        return out
    warnings = "\n".join(_texts(at.warning))
    for h in harms:
        if h.visible and h.name and h.tag not in open_tags and not _shows(warnings, h.name):
            out.append(f"{where}: damaged run {h.name[:80]!r} named in no warning")
    damaged = [h.name for h in harms if h.name]
    for text in _texts(at.error):
        # a view may give up on a damaged run, never on healthy ones
        if text.startswith(VIEW_DOWN) and not any(_shows(text, n) for n in damaged):
            out.append(f"{where}: view down though no damaged run is named: {text[:200]!r}")
    for kind in ("warning", "error"):
        for text in _texts(at.get(kind)):
            if "](" in text:  # markdown renders it: a damaged file would draw a link or image
                out.append(f"{where}: {kind} draws a link or image: {text[:160]!r}")
            for line in text.splitlines():
                if len(line) > MAX_LINE:
                    out.append(f"{where}: {kind} line of {len(line):,} chars: {line[:120]!r}")
    if page == "runs" and at.dataframe:
        table = at.dataframe[0].value
        shown = set(table["run_id"]) if "run_id" in table else set()
        out += [
            f"{where}: healthy run {r} not in the Runs table" for r in healthy if r not in shown
        ]
    for key in RUN_PICKERS + RUN_MULTI_PICKERS:
        try:
            widget = at.selectbox(key=key) if key in RUN_PICKERS else at.multiselect(key=key)
        except KeyError:
            continue
        options = " ".join(widget.options)
        out += [
            f"{where}: healthy run {r} not in picker {key}" for r in healthy if r not in options
        ]
    return out


@dataclass(frozen=True)
class Params:
    """Query params of one page visit (empty = the page's defaults)."""

    values: tuple[tuple[str, str | tuple[str, ...]], ...] = ()

    @classmethod
    def pointing_at(cls, run: str, other: str, question: str = "q001") -> Params:
        return cls(
            (("run", run), ("question", question), ("runs", (run, other)), ("baseline", run))
        )


def visit_every_page(
    params: Params, harms: Sequence[Harm], healthy: Sequence[str], open_tags: Iterable[str]
) -> list[str]:
    """Open the app, then every page, each with `params` in the URL."""
    at = AppTest.from_file(ENTRY, default_timeout=60)
    findings: list[str] = []
    first = True
    for page in PAGES.values():
        at.query_params.clear()
        for k, v in params.values:
            at.query_params[k] = list(v) if isinstance(v, tuple) else v
        if first:
            at.run()  # AppTest must run once before switch_page (TESTING.md)
            first = False
        at.switch_page(page.path).run()
        findings += page_findings(at, page.key, harms, healthy, open_tags)
    return findings


# ----------------------------------------------------------------------------- CLI


@dataclass(frozen=True)
class CliResult:
    argv: tuple[str, ...]
    code: int
    out: str
    err: str


def cli(*argv: str) -> CliResult:
    """`rageval ARGV` in this process. An exception escaping `main` propagates: in a test it
    is the traceback a user would have seen."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    return CliResult(tuple(argv), code, out.getvalue(), err.getvalue())


def cli_findings(r: CliResult, names: Sequence[str]) -> list[str]:
    """The CLI contract: exit 0/1/2, no traceback, stderr lines are `rageval CMD: ...`, at
    most one error line, bounded, and an error names the run or file it is about."""
    where = f"rageval {' '.join(a[:60] for a in r.argv)} (exit {r.code})"
    out = []
    if r.code not in (0, 1, 2):
        out.append(f"{where}: undocumented exit code")
    if "Traceback" in r.err:
        out.append(f"{where}: traceback on stderr")
    prefix = f"rageval {r.argv[0]}: "
    lines = r.err.splitlines()
    errors = [line for line in lines if line.startswith(prefix + "error:")]
    for line in lines:
        if not line.startswith(prefix):
            out.append(f"{where}: stderr line not from rageval: {line[:120]!r}")
        if len(line) > MAX_LINE:
            out.append(f"{where}: stderr line of {len(line):,} chars")
    if len(errors) > 1:
        out.append(f"{where}: {len(errors)} error lines")
    if errors and not any(n in errors[0] for n in names):
        out.append(f"{where}: error names none of {list(names)}: {errors[0][:200]!r}")
    if r.code != 0 and not errors and not r.out.strip():
        out.append(f"{where}: failed without saying why")
    return out


# ----------------------------------------------------------------------------- examples


def fuzz_settings(ci: int) -> settings:
    """`ci` examples in the test suite; RAGEVAL_FUZZ_EXAMPLES=N for the long profile
    (`bench/fuzz_long.py`). No deadline: one example opens seven pages."""
    n = int(os.environ.get("RAGEVAL_FUZZ_EXAMPLES") or ci)
    return settings(
        max_examples=n,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def roles(harms: Sequence[Harm]) -> dict[str, str]:
    """D = a damaged run (the first one touched), H1/H2 = two runs nothing touched."""
    ok = healthy(harms)
    damaged = next((h.run_id for h in harms if h.run_id), None)
    return {"D": damaged or ok[-1], "H1": ok[0], "H2": ok[1]}


def examine_dashboard(
    tmp: Path, items: Sequence, point_at_damage: bool, open_tags: Iterable[str] = KNOWN_OPEN
) -> list[str]:
    """Damage a fresh copy with `items`, open every page, return the findings."""
    results = fresh_copy(tmp)
    harms = apply_all(results, items)
    r = roles(harms)
    params = Params.pointing_at(r["D"], r["H1"]) if point_at_damage else Params()
    with environment(results, tmp / "xdg"):
        return visit_every_page(params, harms, healthy(harms), open_tags)


COMMANDS: tuple[tuple[str, ...], ...] = (
    ("check", "D"),
    ("check", "H1"),
    ("check", "D", "--baseline", "H1"),
    ("compare", "H1", "D"),
    ("compare", "D", "H1"),
    ("compare", "H1", "H2"),
    ("calibrate", LABELS, "--run", "D"),
    ("calibrate", LABELS, "--run", "H1"),
    ("report", "D", "--out", "OUT"),
    ("report", "H1", "--baseline", "D", "--out", "OUT"),
)


def examine_cli(
    tmp: Path,
    items: Sequence,
    commands: Sequence[tuple[str, ...]],
    open_tags: Iterable[str] = KNOWN_OPEN,
) -> list[str]:
    """Damage a fresh copy, run `commands` (roles filled in); a command that involves only
    healthy runs must print what it prints on the undamaged results."""
    results = fresh_copy(tmp)
    harms = apply_all(results, items)
    r = {**roles(harms), "OUT": str(tmp / "report.html")}
    findings = []
    with environment(results, tmp / "xdg"):
        for template in commands:
            argv = tuple(r.get(a, a) for a in template)
            try:
                got = cli(*argv, "--results", str(results))
            except Exception as exc:
                if known_open(str(exc), open_tags):
                    continue
                raise
            findings += cli_findings(got, [r["D"], r["H1"], r["H2"], str(results)])
            if "D" not in template and template[0] != "report":
                want = pristine(argv)
                if (got.code, got.out) != (want.code, want.out):
                    changed = "changed" if got.out != want.out else "same"
                    findings.append(
                        f"rageval {' '.join(argv)}: healthy runs only, yet exit {got.code} "
                        f"(was {want.code}) and output {changed}"
                    )
    return findings


@functools.cache
def pristine(argv: tuple[str, ...]) -> CliResult:
    """What `rageval ARGV` prints on the undamaged results (one copy per session)."""
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-pristine-") as d:
        results = fresh_copy(Path(d))
        with environment(results, Path(d) / "xdg"):
            return cli(*argv, "--results", str(results))
