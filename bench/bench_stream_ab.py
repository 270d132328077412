"""ValidateStream of two installs side by side, stream after stream (issue 17, target 2).

    python bench/bench_stream_ab.py --old /tmp/old-tree/.venv/bin/kingrec [--pairs 7]
        [--count 20000 | --file F.krec] [--per-request 800]

Starts ``kingrec serve`` of the old install (``--old``: another checkout's ``kingrec``) and
of this tree, each a process of its own, and streams the same classic matches (the file
bench/bench_service.py uploads, or ``--file``; ``--per-request`` records a message, one
connection) to each in turn, ``--pairs`` times, alternating who goes first (``in_turn``);
before each stream the compiled checker alone on the same frames in this process (the fast
path). Each stream's
figures: the server's CPU time per match (``/proc``, what the machine's load moves least),
its wall time, and the stream's records/s over the fast path's measured next to it. Both
servers must answer byte for byte alike.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

import grpc
from bench_service import PER_REQUEST, VALIDATE_STREAM, cpu_seconds, server, upload_file
from compiled_only import refuse_pure_twins
from in_turn import NEW, in_turn

from kingrec import fastcheck
from kingrec.container import Frame, read_frames
from kingrec.v1 import service_pb2 as svc


async def stream(address: str, requests: list[bytes]) -> tuple[float, list[bytes]]:
    """The wall time of one ValidateStream of ``requests`` and its responses' bytes."""
    async with grpc.aio.insecure_channel(address) as channel:
        call: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(
            VALIDATE_STREAM
        )
        started = time.perf_counter()
        answers = [raw async for raw in call(iter(requests))]
        return time.perf_counter() - started, answers


def fast_path(payloads: list[bytes]) -> float:
    """The compiled checker's wall time alone on ``payloads``, in batches as the server's."""
    checker = fastcheck._checker
    assert checker is not None, "the fast path needs the compiled module"
    started = time.perf_counter()
    for i in range(0, len(payloads), fastcheck.BATCH):
        checker.check_batch(payloads[i : i + fastcheck.BATCH])
    return time.perf_counter() - started


def judged(answers: list[bytes]) -> int:
    """The verdicts of a stream's responses, every one a clean report."""
    verdicts = [v for raw in answers for v in svc.ValidateStreamResponse.FromString(raw).verdicts]
    assert all(v.report.valid for v in verdicts)
    return len(verdicts)


async def main(args: argparse.Namespace) -> None:
    if not args.old.exists():
        raise SystemExit(f"no such command: {args.old}")
    path = args.file or upload_file(args.count)
    payloads = [item.payload for item in read_frames(path) if isinstance(item, Frame)]
    per = args.per_request
    requests = [
        svc.ValidateStreamRequest(
            records=[svc.Record(krec=p) for p in payloads[i : i + per]]
        ).SerializeToString()
        for i in range(0, len(payloads), per)
    ]
    figures: dict[str, list[tuple[float, float, float]]] = {"old": [], "new": []}
    with server(kingrec=args.old) as old, server(kingrec=NEW) as new:
        places = {"old": old, "new": new}
        first: dict[str, list[bytes]] = {}
        for name in ("old", "new"):  # warm both up once, uncounted
            first[name] = (await stream(places[name][0], requests))[1]
        assert first["old"] == first["new"], "the two servers answer differently"
        assert judged(first["new"]) == len(payloads)
        for _, name, _ in in_turn(args.old, args.pairs):
            (address, pid), local = places[name], fast_path(payloads)
            cpu = cpu_seconds(pid)
            wall, answers = await stream(address, requests)
            cpu = cpu_seconds(pid) - cpu
            assert answers == first[name]
            figures[name].append((cpu, wall, local / wall))
    print(f"ValidateStream of {len(payloads)} classic matches, {per} a message, "
          f"{args.pairs} pairs (load average {os.getloadavg()[0]:.1f})")  # fmt: skip
    medians = {}
    for name, runs in figures.items():
        cpu = statistics.median(c for c, _, _ in runs) / len(payloads) * 1e6
        wall = statistics.median(w for _, w, _ in runs)
        busy = statistics.median(c / w for c, w, _ in runs)
        ratios = sorted(r for _, _, r in runs)
        low, high, middle = ratios[0], ratios[-1], statistics.median(ratios)
        medians[name] = cpu
        print(f"  {name}: server CPU {cpu:.1f} us a match, {len(payloads) / wall:,.0f} matches/s "
              f"wall, the server busy {busy:.0%} of it; stream / fast path "
              f"{middle:.2f} (median; {low:.2f}-{high:.2f})")  # fmt: skip
    ratio = f"{medians['new'] / medians['old']:.2f}" if medians["old"] else "n/a (too short)"
    print(f"  server CPU a match, new / old: {ratio}")  # CPU time counts in clock ticks


if __name__ == "__main__":
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the old install's kingrec")
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--count", type=int, default=20_000, help="classic matches streamed")
    parser.add_argument("--file", type=Path, help="stream this file's matches instead")
    parser.add_argument("--per-request", type=int, default=PER_REQUEST)
    asyncio.run(main(parser.parse_args()))
