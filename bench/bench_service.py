"""The gRPC service under load: Validate, Watch (live fan-out) and Replay.

    python bench/bench_service.py [--seconds 5] [--viewers 100] [--rate 100] [--upload 4000]

Starts ``kingrec serve --port 0`` over a fresh store, as a process of its own (the server gets
a core; the clients, grpc.aio in this process, the other), then measures:

* Validate: records/s with 16 concurrent clients, each sending a simulated classic match
  (a different one each call) as its serialized bytes. Target >= 2,000 records/s.
* Watch: ``--viewers`` viewers of one live match, plus one viewer that never reads, while a
  publisher plays a whole classic match at ``--rate`` cards/s (far faster than people
  play). Every viewer must receive every event in order; the figure is the p99 delay from
  a card leaving the publisher to its event reaching a viewer. Target p99 <= 100 ms.
* Replay: one viewer, as fast as possible, classic matches back to back: events/s.
  Target >= 50,000 events/s.

Upload (>= 20,000 classic matches/s from one stream) comes with the store.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc

from kingrec.rules import preset
from kingrec.simulate import derive_seed, simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec_cli.publish import live_requests
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub

KINGREC = Path(sys.executable).parent / "kingrec"
SEED = 7


@contextmanager
def server() -> Iterator[tuple[str, int]]:
    """``kingrec serve`` over a fresh store in a temporary folder: its address and pid."""
    with tempfile.TemporaryDirectory() as folder:
        process = subprocess.Popen(
            [str(KINGREC), "serve", "--port", "0", "--grace", "1",
             "--db", str(Path(folder, "bench.duckdb"))],
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert process.stdout is not None
        line = process.stdout.readline()
        address = line.split("serving on ")[1].split()[0]
        try:
            yield address, process.pid
        finally:
            process.terminate()
            process.wait(60)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def matches(count: int) -> list[pb.Match]:
    rules = preset("classic")
    return [simulate_match(rules, derive_seed(SEED, i)) for i in range(count)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- Validate ---------------------------------------------------------------------------------


async def bench_validate(
    address: str, pid: int, records: list[bytes], seconds: float, clients: int
) -> None:
    done = 0
    stop = time.perf_counter() + seconds

    async def client(stub: KingrecServiceStub, offset: int) -> None:
        nonlocal done
        i = offset
        while time.perf_counter() < stop:
            record = svc.Record(krec=records[i % len(records)])
            response = await stub.Validate(svc.ValidateRequest(record=record))
            assert response.report.valid
            done += 1
            i += clients

    async with grpc.aio.insecure_channel(address) as channel:
        stub = KingrecServiceStub(channel)
        await stub.Validate(svc.ValidateRequest(record=svc.Record(krec=records[0])))  # warm up
        cpu = cpu_seconds(pid)
        started = time.perf_counter()
        await asyncio.gather(*(client(stub, k) for k in range(clients)))
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(pid) - cpu
    rate = done / elapsed
    verdict = "ok" if rate >= 2000 else "BELOW TARGET"
    print(f"Validate: {rate:,.0f} records/s with {clients} concurrent clients "
          f"({done} calls in {elapsed:.1f} s; server CPU {cpu:.1f} s = {done / cpu:,.0f} "
          f"records per CPU-second; target >= 2,000: {verdict})")  # fmt: skip


# -- Watch ------------------------------------------------------------------------------------


async def bench_watch(address: str, match: pb.Match, viewers: int, rate: float) -> None:
    live_id = f"bench-live-{time.time_ns()}"
    sent: dict[tuple[int, int], float] = {}  # (deal, play) -> when the card left
    # Each viewer keeps the raw responses and when they came; they are decoded afterwards,
    # so that the figure is the service's delivery, not this process decoding 100 streams.
    raw: list[list[tuple[float, bytes]]] = [[] for _ in range(viewers)]
    requests = list(live_requests(match, svc.Pace(), live_id))

    async with grpc.aio.insecure_channel(address) as channel:
        stub = KingrecServiceStub(channel)
        await stub.Publish(iter(requests[:1]))  # the match exists; viewers can come
        watch: grpc.aio.UnaryStreamMultiCallable[svc.WatchRequest, bytes] = channel.unary_stream(
            "/kingrec.v1.KingrecService/Watch",
            request_serializer=svc.WatchRequest.SerializeToString,
            response_deserializer=None,
        )

        async def viewer(k: int) -> None:
            out = raw[k]
            clock = time.perf_counter
            async for response in watch(svc.WatchRequest(match_id=live_id)):
                out.append((clock(), response))

        async def publisher() -> AsyncIterator[svc.PublishRequest]:
            yield svc.PublishRequest(resume=live_id)
            deal = 0
            gap = 1 / rate
            next_at = time.perf_counter()
            for request in requests[1:]:
                if request.HasField("deal"):
                    deal += 1
                    play = 0
                elif request.HasField("card"):
                    next_at += gap
                    await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
                    sent[(deal, play)] = time.perf_counter()
                    play += 1
                yield request

        options = [("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0)]
        async with grpc.aio.insecure_channel(address, options=options) as idle_channel:
            idle = KingrecServiceStub(idle_channel).Watch(svc.WatchRequest(match_id=live_id))
            await idle.read()  # the snapshot; then it never reads again
            tasks = [asyncio.ensure_future(viewer(k)) for k in range(viewers)]
            await asyncio.sleep(0.5)
            started = time.perf_counter()
            response = await stub.Publish(publisher())
            publish_seconds = time.perf_counter() - started
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
            idle.cancel()
    total = response.events
    received = [_decoded(responses) for responses in raw]
    complete = all([seq for seq, _, _ in r] == list(range(1, total + 1)) for r in received)
    delays = [(at - sent[card]) * 1000 for r in received for _, at, card in r if card is not None]
    p50, p99 = statistics.median(delays), percentile(delays, 0.99)
    verdict = "ok" if p99 <= 100 and complete else "BELOW TARGET"
    print(f"Watch: {viewers} viewers + 1 that never reads, {len(sent)} cards at {rate:g}/s "
          f"({total} events; publisher took {publish_seconds:.1f} s); every viewer got every "
          f"event in order: {complete}; publish->delivery p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
          f"max {max(delays):.1f} ms (target p99 <= 100 ms: {verdict})")  # fmt: skip


def _decoded(
    responses: list[tuple[float, bytes]],
) -> list[tuple[int, float, tuple[int, int] | None]]:
    """(seq, when it came, (deal, play) of a card) of every event of a viewer's responses."""
    out = []
    for at, data in responses:
        for event in svc.WatchResponse.FromString(data).events:
            played = event.card_played if event.HasField("card_played") else None
            out.append((event.seq, at, (played.deal, played.play) if played else None))
    return out


# -- Replay -----------------------------------------------------------------------------------


async def bench_replay(address: str, pid: int, match_list: list[pb.Match], seconds: float) -> None:
    events = 0
    async with grpc.aio.insecure_channel(address) as channel:
        stub = KingrecServiceStub(channel)
        cpu = cpu_seconds(pid)
        started = time.perf_counter()
        i = 0
        while time.perf_counter() - started < seconds:
            request = svc.ReplayRequest(record=svc.Record(match=match_list[i % len(match_list)]))
            async for response in stub.Replay(request):
                events += len(response.events)
            i += 1
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(pid) - cpu
    rate = events / elapsed
    verdict = "ok" if rate >= 50_000 else "BELOW TARGET"
    print(f"Replay: {rate:,.0f} events/s to one viewer, as fast as possible ({i} matches, "
          f"{events} events in {elapsed:.1f} s; server CPU {cpu:.1f} s = {events / cpu:,.0f} "
          f"events per CPU-second; target >= 50,000: {verdict})")  # fmt: skip


# -- Upload -----------------------------------------------------------------------------------


async def bench_upload(address: str, pid: int, count: int) -> None:
    rules = preset("classic")
    payloads = [
        simulate_match(rules, derive_seed(SEED + 1, i)).SerializeToString() for i in range(count)
    ]
    per_message = 500
    requests = [
        svc.UploadRequest(
            records=[svc.Record(krec=p) for p in payloads[i : i + per_message]], source="bench"
        )
        for i in range(0, count, per_message)
    ]
    stored = 0
    async with grpc.aio.insecure_channel(address) as channel:
        stub = KingrecServiceStub(channel)
        cpu = cpu_seconds(pid)
        started = time.perf_counter()
        async for response in stub.Upload(iter(requests)):
            stored += sum(v.status == svc.StoreVerdict.STATUS_STORED for v in response.verdicts)
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(pid) - cpu
    assert stored == count, f"{stored} of {count} stored"
    rate = count / elapsed
    verdict = "ok" if rate >= 20_000 else "BELOW TARGET"
    print(f"Upload: {rate:,.0f} classic matches/s stored and acknowledged from one stream "
          f"({count} matches, {count * 20} deals, {per_message} a message, in {elapsed:.1f} s; "
          f"server CPU {cpu:.1f} s = {count / cpu:,.0f} matches per CPU-second; "
          f"target >= 20,000: {verdict})")  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    sample = matches(64)
    with server() as (address, pid):
        print(
            f"kingrec serve at {address}; load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} CPUs"
        )
        payloads = [m.SerializeToString() for m in sample]
        await bench_validate(address, pid, payloads, args.seconds, 16)
        await bench_watch(address, sample[0], args.viewers, args.rate)
        await bench_replay(address, pid, sample, args.seconds)
        await bench_upload(address, pid, args.upload)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per throughput figure")
    parser.add_argument("--viewers", type=int, default=100)
    parser.add_argument("--rate", type=float, default=100.0, help="cards/s the publisher plays")
    parser.add_argument("--upload", type=int, default=4000, help="matches to upload")
    asyncio.run(main(parser.parse_args()))
