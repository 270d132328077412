"""``kingrec.forked``: workers forked from this process on pipes. A job's result is the one
this process would get doing it itself, whatever befalls the worker, and every worker is
reaped when the workers are ended, however they end.

A process forks its workers only while it runs no other thread, and a test process may run
some (gRPC's, left by earlier tests): each case with forked workers runs in a fresh
interpreter (``_fresh``), the check of the same name without ``test``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kingrec import forked
from kingrec.workers import Pooled

TESTS = os.getpid()  # this process: the workers are forks of it and know it by this
# A pipe nobody writes to: a job that reads it never ends (its read end is inherited).
NEVER_READ, NEVER_WRITTEN = os.pipe()


def _where(job: object) -> tuple[int, object]:
    """The job back, with the process that did it; some jobs end badly in a worker."""
    in_worker = os.getpid() != TESTS
    if job == "die" and in_worker:
        os.kill(os.getpid(), signal.SIGKILL)
    if job == "fail" and in_worker:
        raise RuntimeError("fails in a worker only")
    if job == "bad":
        raise ValueError("a bad job")
    if job == "forever" and in_worker:
        os.read(NEVER_READ, 1)
    return os.getpid(), job


def _reaped(pid: int) -> bool:
    """Whether ``pid`` is no child of this process any more: neither running nor a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _dead(pid: int) -> None:
    """Wait until the child ``pid`` has ended, leaving it to be reaped (a zombie)."""
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


def _fresh(check: str) -> None:
    """``check()`` of this module in a fresh interpreter (one thread: its workers forked)."""
    here = str(Path(__file__).resolve().parent)
    code = f"import sys; sys.path.insert(0, {here!r}); import test_forked; test_forked.{check}()"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")


@contextlib.contextmanager
def _two() -> Iterator[forked.Workers[tuple[int, object]]]:
    assert forked.can_fork()  # a fresh interpreter runs no other thread
    workers = forked.workers(2, _where)
    assert isinstance(workers, forked.Forked)
    try:
        yield workers
    finally:
        workers.end(ended_well=False)


def test_jobs_are_done_by_the_forked_workers_and_answered_in_the_order_sent() -> None:
    _fresh("jobs_are_done_by_the_forked_workers_and_answered_in_the_order_sent")


def jobs_are_done_by_the_forked_workers_and_answered_in_the_order_sent() -> None:
    with _two() as two:
        results = [two.submit((i,)) for i in range(8)]
        got = [result.get() for result in results]
        assert [job for _, job in got] == list(range(8))
        assert {pid for pid, _ in got} == set(two.pids)  # each worker took its share
        assert TESTS not in two.pids
        pids = two.pids
        two.end(ended_well=True)
        assert all(_reaped(pid) for pid in pids)


def test_a_worker_killed_mid_job_costs_no_result() -> None:
    _fresh("a_worker_killed_mid_job_costs_no_result")


def a_worker_killed_mid_job_costs_no_result() -> None:
    """The job it died at and those sent to it after are done here, by the same call; the
    other worker goes on with its own, and takes every job from then on."""
    with _two() as two:
        first, second = two.pids
        results = [two.submit((job,)) for job in (1, 2, "die", 4, 5, 6)]  # to each in turn
        got = [result.get() for result in results]
        assert got[:4] == [(first, 1), (second, 2), (TESTS, "die"), (second, 4)]
        # Sent to the first unless it was seen dead by then (its pipe closed): then the other.
        assert got[4] in ((TESTS, 5), (second, 5))
        assert got[5] == (second, 6)
        assert [two.submit((job,)).get() for job in (7, 8)] == [(second, 7), (second, 8)]
        two.end(ended_well=True)
        assert _reaped(first) and _reaped(second)


def test_a_worker_killed_while_idle_has_its_next_jobs_done_here() -> None:
    _fresh("a_worker_killed_while_idle_has_its_next_jobs_done_here")


def a_worker_killed_while_idle_has_its_next_jobs_done_here() -> None:
    workers = forked.workers(1, _where)
    assert isinstance(workers, forked.Forked)
    try:
        (pid,) = workers.pids
        os.kill(pid, signal.SIGKILL)
        _dead(pid)
        assert [workers.submit((job,)).get() for job in (1, 2)] == [(TESTS, 1), (TESTS, 2)]
    finally:
        workers.end(ended_well=True)
    assert _reaped(pid)


def test_a_job_that_fails_in_a_worker_is_done_again_here_raising_as_it_would() -> None:
    _fresh("a_job_that_fails_in_a_worker_is_done_again_here_raising_as_it_would")


def a_job_that_fails_in_a_worker_is_done_again_here_raising_as_it_would() -> None:
    with _two() as two:
        failed, bad, after = (two.submit((job,)) for job in ("fail", "bad", "after"))
        assert failed.get() == (TESTS, "fail")  # fails only in a worker: done here, it succeeds
        with pytest.raises(ValueError, match="a bad job"):
            bad.get()  # fails anywhere: here too, as one job fails
        assert after.get()[0] in two.pids  # the worker that failed at a job goes on


def test_ending_with_a_job_unanswered_kills_and_reaps_the_worker_without_waiting() -> None:
    _fresh("ending_with_a_job_unanswered_kills_and_reaps_the_worker_without_waiting")


def ending_with_a_job_unanswered_kills_and_reaps_the_worker_without_waiting() -> None:
    """Ended well or not, a worker busy with a job no one will read is killed, not waited
    for; an idle one is told to end; both are reaped."""
    with _two() as two:
        busy = two.submit(("forever",))
        assert two.submit((1,)).get()[1] == 1
        assert not busy.ready()
        pids = two.pids
        two.end(ended_well=True)
        assert all(_reaped(pid) for pid in pids)


def test_with_another_thread_running_the_workers_are_a_multiprocessing_pool() -> None:
    """A fork could inherit a lock another thread holds: then the workers are spawned."""
    running = threading.Event()
    other = threading.Thread(target=running.wait, daemon=True)
    other.start()
    try:
        assert not forked.can_fork()
        workers = forked.workers(1, _where)
        try:
            assert isinstance(workers, Pooled)
            pid, job = workers.submit((3,)).get()
            assert job == 3 and pid in workers.pids and pid != TESTS
        finally:
            workers.end(ended_well=True)
    finally:
        running.set()
        other.join()
