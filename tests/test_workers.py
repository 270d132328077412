"""The ``--jobs`` workers: started with the parent's signals blocked until their own
handlers are set, so a ``pool.terminate()`` that comes while a worker is still starting
ends it instead of unwinding it through the parent's SIGTERM handler."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from kingrec import workers


def _signals_now() -> tuple[bool, bool, bool]:
    """In a worker: (SIGTERM blocked, SIGTERM's handler the default, SIGINT ignored)."""
    blocked = signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return (
        blocked,
        signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
        signal.getsignal(signal.SIGINT) == signal.SIG_IGN,
    )


class _ParentsTerminated(BaseException):
    pass


def _parents_handler(signum: int, frame: FrameType | None) -> None:
    raise _ParentsTerminated


@pytest.fixture
def parent_handles_sigterm() -> Iterator[None]:
    """This process handles SIGTERM itself, as ``kingrec``'s console script does."""
    previous = signal.signal(signal.SIGTERM, _parents_handler)
    yield
    signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_worker_has_the_default_sigterm_unblocked_and_ignores_ctrl_c_once_started(
    method: str, parent_handles_sigterm: object
) -> None:
    pool = workers.worker_pool(1, method)
    try:
        assert pool.apply(_signals_now) == (False, True, True)
    finally:
        pool.terminate()
        pool.join()
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # restored


def test_a_forked_worker_starts_with_sigterm_blocked_until_its_handlers_are_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parent_handles_sigterm: object
) -> None:
    seen = tmp_path / "at-start"
    real = workers._die_with

    def recorded(parent: int) -> None:
        blocked = signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        seen.write_text("blocked" if blocked else "open")
        real(parent)

    monkeypatch.setattr(workers, "_die_with", recorded)
    pool = workers.worker_pool(1, "fork")
    try:
        assert pool.apply(os.getpid) != os.getpid()
    finally:
        pool.terminate()
        pool.join()
    assert seen.read_text() == "blocked"


def test_terminating_workers_that_are_still_starting_ends_them(
    parent_handles_sigterm: object,
) -> None:
    for _ in range(10):
        pool = workers.worker_pool(2, "fork")
        children = multiprocessing.active_children()
        pool.terminate()  # at once: the workers may not have run their initializer yet
        pool.join()
        assert not [c for c in children if c.is_alive()]


def test_a_pool_whose_run_ended_well_is_closed_and_joined_never_terminated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminated: list[str] = []
    with workers.run_pool(2) as pool:
        monkeypatch.setattr(pool, "terminate", lambda: terminated.append("terminate"))
        assert pool.apply_async(abs, (-3,)).get(timeout=60) == 3
        started = list(pool._pool)  # type: ignore[attr-defined]
    assert terminated == []  # killing idle workers can leave the pool's threads hung
    assert not any(worker.is_alive() for worker in started)


def test_a_pool_whose_run_failed_is_terminated_and_no_worker_outlives_it() -> None:
    with pytest.raises(ZeroDivisionError), workers.run_pool(2) as pool:
        started = list(pool._pool)  # type: ignore[attr-defined]
        assert pool.apply_async(abs, (-3,)).get(timeout=60) == 3
        raise ZeroDivisionError
    assert not any(worker.is_alive() for worker in started)


# A worker that takes one of its queues' locks and dies holding it (a killed worker never
# releases a lock), then the pool is ended as an interrupted run ends it. ``terminate()``
# waited for ever there: on the task queue's read lock (``_help_stuff_finish``) or on the
# result queue's write lock (the sentinel it puts for the result handler). One worker: an
# idle second one waits for a task holding the task queue's read lock, so the first could
# not take it (the script then hung, now and then, before it ever ended the pool).
_DIES_HOLDING_A_LOCK = """
import multiprocessing, os, signal, sys, time
from kingrec import workers

def die_holding(which):
    frame = sys._getframe(1)
    while frame.f_code.co_name != "worker":  # multiprocessing.pool.worker(inqueue, outqueue..)
        frame = frame.f_back
    queue = frame.f_locals[which]
    (queue._rlock if which == "inqueue" else queue._wlock).acquire()
    with open(sys.argv[2], "w") as f:
        f.write(str(os.getpid()))
    os.kill(os.getpid(), signal.SIGKILL)

if __name__ == "__main__":
    pool = workers.worker_pool(1, "fork")
    started = list(pool._pool)
    pool.apply_async(die_holding, (sys.argv[1],))
    for _ in range(1200):  # until the lock is held: at most a minute
        if os.path.exists(sys.argv[2]) and os.path.getsize(sys.argv[2]):
            break
        time.sleep(0.05)
    else:
        sys.exit("the worker never took the lock")
    workers.end_pool(pool, ended_well=False)
    left = [p.pid for p in (*started, *pool._pool, *multiprocessing.active_children())
            if p.is_alive()]
    print("ended", left)
"""


@pytest.mark.parametrize("lock", ["inqueue", "outqueue"])
def test_an_interrupted_pool_ends_though_a_killed_worker_held_a_queue_lock(
    lock: str, tmp_path: Path
) -> None:
    script = tmp_path / "dies_holding.py"
    script.write_text(_DIES_HOLDING_A_LOCK)
    result = subprocess.run(
        [sys.executable, str(script), lock, str(tmp_path / "pid")],
        capture_output=True,
        text=True,
        timeout=60,  # pool.terminate() never returns here: the test fails, it does not hang
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ended []"  # every worker gone, the replacement too


def test_an_interrupted_pool_kills_workers_busy_with_a_task() -> None:
    pool = workers.worker_pool(2, "fork")
    started = list(pool._pool)  # type: ignore[attr-defined]
    busy = pool.apply_async(time.sleep, (600,))
    assert pool.apply_async(abs, (-3,)).get(timeout=60) == 3  # the other one answers
    workers.end_pool(pool, ended_well=False)
    assert not any(worker.is_alive() for worker in started)
    assert not pool._pool or not any(w.is_alive() for w in pool._pool)  # type: ignore[attr-defined]
    assert not busy.ready()  # abandoned, not waited for


def test_the_worker_handler_does_not_wake_for_each_result(monkeypatch: pytest.MonkeyPatch) -> None:
    # CPython's handler also waited on the result queue's reader: it woke again and again
    # while each result was being read (1,935 times for 116 results of a validation).
    wakes: list[int] = []
    real = multiprocessing.pool.Pool._wait_for_updates  # type: ignore[attr-defined]

    def counted(sentinels: list[object], change_notifier: object, timeout: object = None) -> None:
        wakes.append(len(sentinels))
        real(sentinels, change_notifier, timeout)

    monkeypatch.setattr(multiprocessing.pool.Pool, "_wait_for_updates", staticmethod(counted))
    with workers.run_pool(2) as pool:
        sizes = pool.map_async(len, [bytes(1 << 18)] * 64, chunksize=1).get(timeout=120)
        results = pool.map_async(bytes, [1 << 18] * 64, chunksize=1).get(timeout=120)
    assert sizes == [1 << 18] * 64 and [len(r) for r in results] == sizes
    assert len(wakes) <= 8  # its first wait, the cache drained twice, the close: not 128
