"""Work spread over worker processes a part at a time, kept going past a part that fails.

The derived cache's large builds run here (`cache.DerivedCache.update`): on a thread of
the dashboard's server they shared its GIL with the pages, and took twice as long as
the same build in a process of its own. Workers are spawned, never forked: the server
holds threads and DuckDB connections, which a fork would copy in whatever state they
were in. Nor do they import the main module again, as spawned processes do: in the
server that is the app's own script (Streamlit makes it `__main__`), which would start
the app, and its build, in every worker.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, as_completed
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # imported when a build starts: no page's first render needs them
    from concurrent.futures import ProcessPoolExecutor

T = TypeVar("T")
R = TypeVar("R")

RETRIES = 2
"""Times an item alone is tried again after its worker died: a worker that dies (killed,
out of memory) takes the items of every part then in flight with it, most of them
innocent."""


class WorkersUnavailable(RuntimeError):
    """No worker process starts here (none can be created, or each dies at once): the
    caller does the work itself."""


@contextmanager
def _main_hidden() -> Iterator[None]:
    """An empty `__main__` while workers are spawned (see the module doc): what a
    spawned process imports again is decided when it is started. Put back unless a
    script run (Streamlit sets `__main__` at each) replaced it meanwhile."""
    main, empty = sys.modules.get("__main__"), types.ModuleType("__main__")
    sys.modules["__main__"] = empty
    try:
        yield
    finally:
        if sys.modules.get("__main__") is empty and main is not None:
            sys.modules["__main__"] = main


def _started(pool: ProcessPoolExecutor) -> None:
    """A trivial task, so that a worker that cannot start is told apart from a part
    that kills its worker."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        pool.submit(os.getpid).result()
    except BrokenProcessPool as exc:
        raise WorkersUnavailable(str(exc)) from exc


NICENESS = 10
"""How much lower a worker's scheduling priority is than the server's: a first start's
build takes every core, and without it the first page waited its turn behind the
workers (11.6 s wall for 5.3 s of the server's CPU on 2 idle cores). The build still
has every core the pages leave idle."""


def _yield_to_the_server() -> None:
    """A worker's initializer (see NICENESS); where the OS has no niceness, nothing."""
    if hasattr(os, "nice"):
        os.nice(NICENESS)


def cores() -> int:
    """The cores this process may run on: one worker each."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def in_workers(
    parts: Sequence[list[T]],
    work: Callable[[list[T]], R],
    on_done: Callable[[list[T], R], None],
    on_failed: Callable[[T, BaseException], None],
    workers: int | None = None,
) -> None:
    """`work(part)` for every part in `workers` spawned processes (one per core by
    default); `on_done(part, result)` here, as each part finishes, in any order.

    A part that raises is split into its items, each tried alone; an item that raises
    alone goes to `on_failed(item, error)` and the other parts go on. `work` must be
    picklable (a module-level function, or a `functools.partial` of one).
    WorkersUnavailable, before any part ran, when a worker cannot even start here.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    todo: list[tuple[list[T], int]] = [(list(p), 0) for p in parts if p]

    def settle(future: Future[R], part: list[T], tries: int) -> bool:
        """Hand a finished part on; True when its worker died (the pool is broken)."""
        try:
            result = future.result()
        except Exception as exc:  # noqa: BLE001 - the item is reported, see above
            broken = isinstance(exc, BrokenProcessPool)
            if len(part) > 1:
                todo.extend(([item], tries) for item in part)
            elif broken and tries < RETRIES:
                todo.append((part, tries + 1))
            else:
                on_failed(part[0], exc)
            return broken
        on_done(part, result)
        return False

    context = multiprocessing.get_context("spawn")
    first = True
    while todo:
        pool = ProcessPoolExecutor(
            workers or cores(), mp_context=context, initializer=_yield_to_the_server
        )
        batch, todo = todo, []
        try:
            with _main_hidden():  # a worker is started by a submit when none is idle
                if first:
                    _started(pool)
                    first = False
                if any(tries for _, tries in batch):
                    # A worker died: the items it took down go one at a time, or the one
                    # that kills its worker would take the others down with it again.
                    for i, (part, tries) in enumerate(batch):
                        if settle(pool.submit(work, part), part, tries):
                            todo += batch[i + 1 :]
                            break
                    continue
                futures = {pool.submit(work, part): (part, tries) for part, tries in batch}
            for future in as_completed(futures):
                settle(future, *futures[future])
        finally:  # a broken pool is replaced for the retries; an error here stops the rest
            pool.shutdown(wait=True, cancel_futures=True)
