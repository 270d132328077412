"""The ``--jobs`` workers: started with the parent's signals blocked until their own
handlers are set, so a ``pool.terminate()`` that comes while a worker is still starting
ends it instead of unwinding it through the parent's SIGTERM handler."""

from __future__ import annotations

import multiprocessing
import os
import signal
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
