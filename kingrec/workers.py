"""The worker processes of ``--jobs``: a pool whose workers leave Ctrl-C and SIGTERM to the
parent and end when it does. One place for the simulator, the validator and the analyser."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.pool
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

__all__ = ["end_pool", "run_pool", "worker_pool"]

# The signals the parent handles itself (Ctrl-C, and SIGTERM raised as ``Terminated``).
_PARENTS = {signal.SIGINT, signal.SIGTERM}


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
        return context.Pool(jobs, initializer=_die_with, initargs=(os.getpid(),))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def end_pool(pool: multiprocessing.pool.Pool, *, ended_well: bool) -> None:
    """End a pool of ``worker_pool``: closed and joined when its run ended well (each worker
    ends of itself after its last task), terminated when it failed or was interrupted (no
    worker outlives it).

    A run that ended well never terminates its pool: ``terminate()`` kills the workers
    wherever they are, and one killed while it holds the task queue's lock leaves the
    pool's own threads waiting on that lock for ever (seen in CI: a ``simulate --jobs 2``
    that had written its last match hung for 15 minutes, both its workers gone, one pool
    thread in a semaphore's wait)."""
    if ended_well:
        pool.close()
    else:
        pool.terminate()
    pool.join()


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


def _die_with(parent: int) -> None:
    """Worker start: leave Ctrl-C and SIGTERM handling to the parent, and end when it does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _PARENTS)
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(1)

    def watch() -> None:  # elsewhere (and as a second line): notice the parent is gone
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
