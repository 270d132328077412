"""Worker processes forked from this one, each on a pair of pipes: the ``--jobs`` workers
of ``kingrec validate`` without ``multiprocessing``.

A ``multiprocessing`` pool costs ``validate --jobs 2`` twice over: importing it and starting
the pool is serial time before the first range (some 54 M instructions, a sixth of a whole
one-match run), and its three helper threads wake this process for every task and result,
taking the GIL from the thread that judges. Here a worker is a fork of this process
(kingrec already imported, at work at once) that reads jobs from a pipe of its own and
writes their results, in order, to another; this process writes the jobs and reads the
results itself, when it wants them, with no thread at all.

A fork is safe only while this process runs no other thread (a child would inherit any lock
another thread holds): ``workers`` forks then, and otherwise (or where there is no fork)
starts a ``multiprocessing`` pool with the same face (``kingrec.workers.Pooled``).

A worker ignores Ctrl-C (this process handles it and ends the workers) and takes SIGTERM's
default; it ends when its job pipe reaches its end (this process closed it, or died) and, on
Linux, with this process (PR_SET_PDEATHSIG). A worker that dies, or fails at a job, costs no
result: its jobs are done here, by the same call. Ended well, idle workers are told to end
and reaped; otherwise killed and reaped: no orphan, no zombie.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import signal
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

__all__ = ["Forked", "Result", "Workers", "can_fork", "end_with_parent", "in_worker", "workers"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# The signals this process handles itself (Ctrl-C, and SIGTERM raised as ``Terminated``):
# blocked while a worker is forked, so that none runs this process's handler in the child.
PARENTS = {signal.SIGINT, signal.SIGTERM}
_JOB = struct.Struct("<I")  # a job: its pickled arguments' length, then them
_RESULT = struct.Struct("<IB")  # a result: its length and whether the job was done, then it
_READ = 1 << 18  # bytes read from a result pipe at a time
# A result pipe this big (Linux; the unprivileged most) holds a range's result whole, so a
# worker goes on to its next job while this process judges instead of reading.
_PIPE_BYTES = 1 << 20


class Result(Protocol[T_co]):
    """A job's result to come: ``ready`` (no wait), ``get`` (waits for it)."""

    def ready(self) -> bool: ...

    def get(self) -> T_co: ...


class Workers(Protocol[T_co]):
    """Processes doing one task's jobs: ``submit`` a job's arguments, ``end`` them all."""

    @property
    def pids(self) -> list[int]: ...

    def submit(self, args: tuple[object, ...]) -> Result[T_co]: ...

    def end(self, *, ended_well: bool) -> None: ...


_serving = False  # this process is a forked worker (set in ``_serve``)


def in_worker() -> bool:
    """Whether this process is a worker forked by ``Forked``: one whose end (a crash
    included) costs no result, its jobs being done again by its parent."""
    return _serving


def can_fork() -> bool:
    """Whether this process can fork workers: it has fork and runs no thread but this one
    (on Linux, counted by the kernel: a thread C code started is one too)."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # no /proc: Python's threads are all there is to count
        return True


def workers(count: int, task: Callable[..., T]) -> Workers[T]:
    """``count`` processes doing ``task``'s jobs: forked where that is safe (``can_fork``),
    else a ``multiprocessing`` pool (each worker then a fresh interpreter where another
    thread runs; ``task`` must be a module's function, found by its name)."""
    if can_fork():
        return Forked(count, task)
    from .workers import Pooled  # multiprocessing only where fork is not safe

    return Pooled(count, task, "spawn" if hasattr(os, "fork") else None)


class _Pending(Generic[T]):
    """A job sent to a worker: its result once read, or done here once the worker is lost
    (or failed at it)."""

    __slots__ = ("_args", "_done", "_here", "_value", "_worker")

    def __init__(self, worker: _Worker[T], args: tuple[object, ...]) -> None:
        self._worker = worker
        self._args = args
        self._done = False
        self._here = False
        self._value: T | None = None

    def ready(self) -> bool:
        if not self._done:
            self._worker.read(wait=False)
        return self._done

    def get(self) -> T:
        while not self._done:
            self._worker.read(wait=True)
        if self._here:  # the worker could not: the same call, here (raising as it would)
            self._here = False
            self._value = self._worker.task(*self._args)
        return self._value  # type: ignore[return-value]  # set: done

    def _set(self, value: T) -> None:
        self._value, self._done = value, True

    def _to_do_here(self) -> None:
        self._here = self._done = True


class _Worker(Generic[T]):
    """One forked worker as this process sees it: its job pipe (written), its result pipe
    (read), the jobs it has not answered, in the order sent."""

    def __init__(self, pid: int, jobs: int, results: int, task: Callable[..., T]) -> None:
        self.pid = pid
        self.task = task
        self.jobs = jobs
        self.results = results
        self.waiting: deque[_Pending[T]] = deque()
        self.lost = False  # dead, or its pipes closed: it takes no more jobs
        self.reaped = False
        self._inbox = bytearray()
        self._poll = select.poll()
        self._poll.register(results, select.POLLIN)

    def send(self, args: tuple[object, ...]) -> _Pending[T] | None:
        """The job to this worker; None when it is gone."""
        message = pickle.dumps(args, pickle.HIGHEST_PROTOCOL)
        try:
            _write_all(self.jobs, _JOB.pack(len(message)) + message)
        except OSError:  # gone (EPIPE): its jobs so far are done here
            self._lose()
            return None
        pending = _Pending(self, args)
        self.waiting.append(pending)
        return pending

    def read(self, *, wait: bool) -> None:
        """Take what the worker has written of its results (``wait``: at least one read)."""
        if self.lost:
            return
        if not wait and not self._poll.poll(0):
            return
        try:
            chunk = os.read(self.results, _READ)
        except OSError:
            chunk = b""
        if not chunk:  # its end: dead (its jobs to come are done here)
            self._lose()
            return
        inbox = self._inbox
        inbox += chunk
        taken = 0
        while len(inbox) - taken >= _RESULT.size:
            size, done = _RESULT.unpack_from(inbox, taken)
            end = taken + _RESULT.size + size
            if len(inbox) < end:
                break
            pending = self.waiting.popleft()
            if done:
                with memoryview(inbox) as view:
                    pending._set(pickle.loads(view[taken + _RESULT.size : end]))
            else:
                pending._to_do_here()
            taken = end
        del inbox[:taken]

    def _lose(self) -> None:
        self.lost = True
        while self.waiting:
            self.waiting.popleft()._to_do_here()
        self.close()

    def close(self) -> None:
        """Close this end of both pipes: the worker reads the end of its jobs, and a result
        it writes meets a closed pipe."""
        for fd in (self.jobs, self.results):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.jobs = self.results = -1
        self.lost = True


class _Here(Generic[T]):
    """A job no worker could take: done here when its result is asked for."""

    def __init__(self, task: Callable[..., T], args: tuple[object, ...]) -> None:
        self._task, self._args = task, args

    def ready(self) -> bool:
        return True

    def get(self) -> T:
        return self._task(*self._args)


class Forked(Generic[T]):
    """``count`` workers forked from this process now, each doing ``task``'s jobs in the
    order sent to it; a job goes to the worker with the fewest unanswered."""

    def __init__(self, count: int, task: Callable[..., T]) -> None:
        self.task = task
        self._workers: list[_Worker[T]] = []
        try:
            for _ in range(count):
                self._workers.append(self._fork())
        except BaseException:  # an interrupt mid-start: none of them outlives it
            self.end(ended_well=False)
            raise

    @property
    def pids(self) -> list[int]:
        return [worker.pid for worker in self._workers]

    def _fork(self) -> _Worker[T]:
        jobs_read, jobs_write = os.pipe()
        results_read, results_write = os.pipe()
        with contextlib.suppress(OSError, AttributeError, ValueError):
            import fcntl

            fcntl.fcntl(results_write, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        parent = os.getpid()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, PARENTS)
        try:
            pid = os.fork()
            if pid == 0:
                # This process's ends of every pipe, so that a worker sees its job pipe end
                # when this process closes it (or dies), whatever its siblings hold.
                ours = [jobs_write, results_read]
                for other in self._workers:
                    ours += [other.jobs, other.results]
                _serve(parent, jobs_read, results_write, ours, self.task)
            os.close(jobs_read)
            os.close(results_write)
            return _Worker(pid, jobs_write, results_read, self.task)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def submit(self, args: tuple[object, ...]) -> Result[T]:
        """A job to the worker with the fewest unanswered; done here if every one is gone."""
        while live := [worker for worker in self._workers if not worker.lost]:
            pending = min(live, key=lambda worker: len(worker.waiting)).send(args)
            if pending is not None:
                return pending
        return _Here(self.task, args)

    def end(self, *, ended_well: bool) -> None:
        """End every worker: ended well and idle (every result read), a worker is told to end
        (its job pipe closed); otherwise, or busy with a job no one wants, killed. Each is
        reaped."""
        for worker in self._workers:
            busy = bool(worker.waiting)
            worker.close()
            if (busy or not ended_well) and not worker.reaped:
                with contextlib.suppress(OSError):
                    os.kill(worker.pid, signal.SIGKILL)
        for worker in self._workers:
            if not worker.reaped:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(worker.pid, 0)
                worker.reaped = True


def _serve(
    parent: int, jobs: int, results: int, ours: Sequence[int], task: Callable[..., object]
) -> None:
    """A forked worker's life: each job read from ``jobs`` done and its result written to
    ``results``, until the jobs end. Never returns (nothing of the parent's runs on here)."""
    global _serving
    _serving = True
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, PARENTS)
        for fd in ours:
            os.close(fd)
        # A worker's crash costs no result (its jobs are done again here): no core file
        # either.
        with contextlib.suppress(ImportError, OSError, ValueError):
            import resource

            resource.setrlimit(
                resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1])
            )
        # The parent's objects are shared with it until written: a collection here would
        # touch (and so copy) every page of them.
        gc.freeze()
        end_with_parent(parent)
        with os.fdopen(jobs, "rb") as inbox:
            while head := inbox.read(_JOB.size):
                (size,) = _JOB.unpack(head)
                args = pickle.loads(inbox.read(size))
                try:
                    out = pickle.dumps(task(*args), pickle.HIGHEST_PROTOCOL)
                    done = 1
                except Exception:  # done again in the parent, to fail there as one job does
                    out, done = b"", 0
                _write_all(results, _RESULT.pack(len(out), done) + out)
        code = 0
    except BaseException:  # the parent gone mid-write, or a signal: end, quietly
        pass
    finally:
        os._exit(code)


def end_with_parent(parent: int) -> None:
    """In a worker: die when the parent ``parent`` does (Linux: PR_SET_PDEATHSIG), and at
    once if it already has."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(1)


def _write_all(fd: int, data: bytes) -> None:
    written = 0
    with memoryview(data) as view:
        while written < len(data):
            with view[written:] as rest:
                written += os.write(fd, rest)
