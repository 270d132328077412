"""The worker processes of ``--jobs``: a pool whose workers leave Ctrl-C and SIGTERM to the
parent and end when it does. One place for the simulator and the analyser, and for the
validator where it cannot fork its own workers (``kingrec.forked``: ``Pooled``)."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.pool
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from .forked import PARENTS as _PARENTS
from .forked import end_with_parent

__all__ = ["Pooled", "end_pool", "run_pool", "worker_pool"]

T = TypeVar("T")


def worker_pool(jobs: int, method: str | None = None) -> multiprocessing.pool.Pool:
    """``jobs`` worker processes (``method``: how they start, the platform's default when
    None).

    A forked worker starts with the parent's signal handlers; until its initializer has run,
    a SIGTERM (``pool.terminate()`` sends one to every worker) would raise the parent's
    ``Terminated`` inside a worker that is still starting, unwind it mid-start, and leave
    ``terminate()`` waiting for it forever. So the workers are started with those signals
    blocked (a child inherits the mask, and so do the pool's own threads, which start any
    replacement worker), and each worker unblocks them once its handlers are the defaults:
    a SIGTERM that came meanwhile then ends it as it should."""
    context = multiprocessing.get_context(method)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _PARENTS)
    try:
        return _Pool(jobs, initializer=_die_with, initargs=(os.getpid(),), context=context)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


class _Pool(multiprocessing.pool.Pool):
    """A pool whose worker handler (the thread that replaces a worker that died) wakes only
    for what it acts on: a worker's end, and the pool's notifier (a change of state, the
    task cache drained).

    CPython's handler (3.11 to 3.13) also waits on the result queue's reader, which stays
    readable until the result handler has read a whole result: it woke again and again
    meanwhile, about 17 times a result, ending and re-entering its wait with the GIL taken
    each time (1,935 wakes for the 116 results of ``validate --jobs 2`` of 2 M deals, the
    largest share of the parent's CPU after its start-up). ``ThreadPool`` overrides the
    same method the same way."""

    def _get_sentinels(self) -> list[object]:
        notifier = getattr(self, "_change_notifier", None)
        reader = getattr(notifier, "_reader", None)
        if reader is None:  # not the pool this was written for: its own sentinels
            return super()._get_sentinels()  # type: ignore[misc, no-any-return]
        return [reader]


def end_pool(pool: multiprocessing.pool.Pool, *, ended_well: bool) -> None:
    """End a pool of ``worker_pool``: closed and joined when its run ended well (each worker
    ends of itself after its last task), its workers killed when it failed or was
    interrupted (no worker outlives it, and nothing waits on them).

    ``Pool.terminate()`` is not used: its handshake with the pool's threads takes the queues'
    locks (the task queue's read lock, the result queue's write lock), and a worker killed
    while it holds one (a killed worker never releases it) leaves that wait for ever: seen in
    CI, a ``simulate --jobs 2`` sent SIGTERM that did not exit, and one that had written its
    last match hung for 15 minutes, both its workers gone, a pool thread in a semaphore's
    wait. ``_stop`` ends the pool without taking a queue's lock."""
    if ended_well:
        pool.close()
        pool.join()
    else:
        _stop(pool)


# How long the interrupted end waits for the pool's worker handler to notice (it wakes at
# once: it waits on the workers' ends and on the pool's notifier) and for a killed worker
# to be reaped (SIGKILL cannot be caught). Bounds, not sleeps: nothing waits longer than it
# must, and a stuck wait cannot hold the interrupted process.
_STOP_WAIT_S = 10.0


def _stop(pool: multiprocessing.pool.Pool) -> None:
    """Stop ``pool`` at once, as ``terminate()`` would but taking no lock a worker may hold.

    It touches the least of CPython's private pool state (as in 3.11 to 3.13's
    ``multiprocessing/pool.py``), each piece guarded: without it, ``terminate()`` as before.

    1. The worker handler is told to end before a worker is killed, so that it starts no
       replacement for one (it checks its ``_state`` before each round of upkeep), and the
       task and result handlers are told to stop too (they look at their ``_state`` between
       tasks); all three are daemon threads, left to end or to die with the process: the
       task and result handlers may be waiting on a queue whose lock a dead worker holds.
    2. The workers are killed (SIGKILL: one still starting has SIGTERM blocked) and reaped,
       twice: the second pass gets a replacement the worker handler started before it saw
       its ``_state`` (one started later still, if the handler took longer than
       ``_STOP_WAIT_S`` to end, dies with this process: ``_die_with``).
    3. The pool's finalizer (``_terminate_pool``, run by ``terminate()``, by the pool's
       ``__del__`` and at interpreter exit) is cancelled: it is the handshake itself.
    """
    handlers = [getattr(pool, name, None) for name in _HANDLERS]
    workers = getattr(pool, "_pool", None)
    finalizer = getattr(pool, "_terminate", None)
    notifier = getattr(pool, "_change_notifier", None)
    if (
        not all(isinstance(h, threading.Thread) for h in handlers)
        or not isinstance(workers, list)
        or not callable(getattr(finalizer, "cancel", None))
    ):  # not the pool this was written for: its own way, handshake and all
        pool.terminate()
        pool.join()
        return
    terminate = multiprocessing.pool.TERMINATE
    pool._state = terminate  # type: ignore[attr-defined]  # no new tasks; no __del__ warning
    for handler in handlers:
        handler._state = terminate  # type: ignore[union-attr]
    _kill(workers)
    if notifier is not None:  # wake the worker handler (no worker ever takes this lock)
        with contextlib.suppress(OSError, ValueError):
            notifier.put(None)
    worker_handler = handlers[0]
    assert isinstance(worker_handler, threading.Thread)
    if worker_handler is not threading.current_thread():
        worker_handler.join(_STOP_WAIT_S)
    _kill(workers)
    finalizer.cancel()  # type: ignore[union-attr]


# The pool's threads, the worker handler first (``_stop`` joins it).
_HANDLERS = ("_worker_handler", "_task_handler", "_result_handler")


def _kill(workers: list[multiprocessing.Process]) -> None:
    """Kill every worker still running and reap them all, each wait bounded."""
    for worker in list(workers):
        if worker.exitcode is None:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                worker.kill()
    deadline = time.monotonic() + _STOP_WAIT_S
    for worker in list(workers):
        with contextlib.suppress(OSError, ValueError, AssertionError, AttributeError):
            worker.join(max(0.0, deadline - time.monotonic()))


@contextlib.contextmanager
def run_pool(jobs: int, method: str | None = None) -> Iterator[multiprocessing.pool.Pool]:
    """``worker_pool`` for the length of a ``with`` block, ended by ``end_pool``: as one that
    ended well when the block does, else (an error, an interrupt, a generator closed early)
    terminated."""
    pool = worker_pool(jobs, method)
    try:
        yield pool
    except BaseException:
        end_pool(pool, ended_well=False)
        raise
    end_pool(pool, ended_well=True)


class Pooled(Generic[T]):
    """``worker_pool`` with the face of ``kingrec.forked.Workers``: ``task``'s jobs
    submitted, the pool ended by ``end_pool``."""

    def __init__(self, count: int, task: Callable[..., T], method: str | None) -> None:
        self._task = task
        self._pool = worker_pool(count, method)

    @property
    def pids(self) -> list[int]:
        return [worker.pid for worker in getattr(self._pool, "_pool", [])]

    def submit(self, args: tuple[object, ...]) -> multiprocessing.pool.AsyncResult[T]:
        return self._pool.apply_async(self._task, args)

    def end(self, *, ended_well: bool) -> None:
        end_pool(self._pool, ended_well=ended_well)


def _die_with(parent: int) -> None:
    """Worker start: leave Ctrl-C and SIGTERM handling to the parent, and end when it does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _PARENTS)
    end_with_parent(parent)

    def watch() -> None:  # elsewhere (and as a second line): notice the parent is gone
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
