"""The local lease on real files: at most one holder in any order of takes and releases,
under threads racing on it, and whatever bytes a damaged lease file holds."""

from __future__ import annotations

import json
import threading
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.runs.layout import lease_name
from rageval_core.runs.lease import LocalLease, Owner

ops = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["take", "release"])), max_size=30)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_at_most_one_holder_in_any_order(tmp_path_factory, schedule):
    run = tmp_path_factory.mktemp("results") / "r"
    leases = [LocalLease(run / lease_name()) for _ in range(4)]
    holder = None
    for who, op in schedule:
        if op == "take" and holder is None:
            assert leases[who].acquire() is None
            holder = who
        elif op == "take" and holder != who:
            assert leases[who].acquire() == Owner.describe((run / lease_name()).read_bytes())
        elif op == "release" and holder == who:
            leases[who].release()
            holder = None
        assert (run / lease_name()).exists() == (holder is not None)
    if holder is not None:
        leases[holder].release()
    assert not run.exists()  # the folder the first taker made goes with the last lease


TAKES = 20  # each thread's successful takes: a count of successes, not of attempts


def test_threads_racing_for_the_lease_never_hold_it_together(tmp_path):
    # Each thread tries until it has held the lease TAKES times. A fixed number of attempts
    # made the count of takes depend on the scheduler: on a loaded machine a holder's sleep
    # stretched and the others spent their attempts failing (`taken > 10` failed then).
    path = tmp_path / "r" / lease_name()
    inside, overlaps, taken = [0], [0], [0]
    lock = threading.Lock()
    start = threading.Barrier(6)
    give_up = time.monotonic() + 60  # only against a lease never released; not asserted on

    def writer() -> None:
        start.wait()
        mine = 0
        while mine < TAKES and time.monotonic() < give_up:
            lease = LocalLease(path)  # its own open file, as another process would have
            if lease.acquire() is not None:
                time.sleep(0)  # let the holder run
                continue
            mine += 1
            with lock:
                inside[0] += 1
                overlaps[0] += inside[0] > 1
                taken[0] += 1
            time.sleep(0.0005)
            with lock:
                inside[0] -= 1
            lease.release()

    threads = [threading.Thread(target=writer) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps[0] == 0
    assert taken[0] == 6 * TAKES


values = st.one_of(st.text(), st.integers(), st.floats(), st.none(), st.lists(st.text()))
owners = st.fixed_dictionaries({"host": values, "pid": values, "since": values})


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300), owners.map(lambda d: json.dumps(d).encode())))
def test_a_damaged_lease_file_still_gives_a_short_holder(data):
    described = Owner.describe(data)
    assert isinstance(described, str) and len(described.splitlines()) == 1
    assert len(described) < 200


def test_a_holder_is_named_by_host_and_pid(tmp_path):
    first, second = LocalLease(tmp_path / lease_name(3)), LocalLease(tmp_path / lease_name(3))
    assert first.acquire() is None
    holder = second.acquire()
    assert holder is not None and " pid " in holder and " since " in holder
    first.release()
    assert second.acquire() is None
    second.release()
