"""The HTTP face of ``kingrec serve --http`` at scale: the matches page, replays, live viewers.

    python bench/bench_http.py --db big.duckdb                  # a store you have (ingested)
    python bench/bench_http.py --db big.duckdb --viewers 200 --cards-per-s 100

Runs ``kingrec serve --http :0`` as a process over the store (a copy is not made: the server
owns the file while it runs) and measures, as a browser would see it, over loopback:

* **matches**: ``GET /api/matches`` — the first page, a page deep in the store (its
  ``page_token``), a page filtered by player and by validity — best and median of repeated
  calls, each a new connection. Target: <= 300 ms on a 100,000-match store.
* **replay**: a stored match's events unpaced, as NDJSON and as SSE, read whole by one
  client: events/s end to end (the client's parsing included). Target: >= 20,000 events/s.
* **live**: one match published over gRPC at ``--cards-per-s`` while ``--viewers`` SSE
  viewers (each a connection of its own, all in one asyncio client process) watch it, and
  one more viewer that never reads a byte. Every viewer must get every event in order;
  latency is a card's publish (the publisher's clock, just before the request is handed to
  grpc) to its receipt by each viewer (``time.monotonic``, one clock for every process of
  the machine); the server's RSS is read from /proc before and after. Targets: p99 <= 100
  ms, RSS bounded, the stalled viewer harmless (the others' figures are what they are
  without it: compare with ``--no-stalled``).

Figures depend on what else the machine runs (the client processes share its cores with the
server); the server's CPU time per event is printed beside the rates.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from compiled_only import refuse_pure_twins

from kingrec.records import Record, read_records
from kingrec.v1 import service_pb2 as svc
from kingrec_cli.publish import live_requests
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub

ROOT = Path(__file__).resolve().parent.parent
KINGREC = Path(sys.executable).parent / "kingrec"
CLASSIC = ROOT / "samples" / "valid" / "classic.krec"


class Server:
    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [str(KINGREC), "serve", "--port", "0", "--db", str(db), "--http", ":0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        grpc_line = self.process.stdout.readline()
        http_line = self.process.stdout.readline()
        self.grpc_port = int(grpc_line.split("127.0.0.1:")[1].split()[0])
        self.port = int(http_line.rsplit(":", 1)[1].strip().rstrip("/"))

    def cpu(self) -> float:
        """The server's CPU seconds so far (user + system)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> tuple[float, float]:
        """The server's resident set now and at its peak, MiB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        values = {
            line.split(":")[0]: int(line.split()[1]) / 1024
            for line in status.splitlines()
            if line.startswith(("VmRSS", "VmHWM"))
        }
        return values["VmRSS"], values["VmHWM"]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        if self.process.stdout is not None:
            self.process.stdout.close()


def get(port: int, path: str, accept: str = "application/json") -> bytes:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        connection.request("GET", path, headers={"Accept": accept})
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200, (path, body[:300])
        return body
    finally:
        connection.close()


# -- the matches page ------------------------------------------------------------------------------


def bench_matches(server: Server, repeat: int) -> None:
    first = json.loads(get(server.port, "/api/matches?limit=100"))
    name = first["matches"][0]["players"][0]["name"]
    # a page in the middle of the store: walk there with big pages (not timed)
    tokens = []
    token = ""
    for _ in range(5000):
        page = json.loads(get(server.port, f"/api/matches?limit=1000&page_token={token}"))
        token = page["next_page_token"]
        if not token:
            break
        tokens.append(token)
    middle = tokens[len(tokens) // 2] if tokens else ""
    deep = f"/api/matches?limit=100&page_token={middle}"
    pages = {
        "first page (100)": "/api/matches?limit=100",
        "a page in the middle (100)": deep,
        f"player={name} (100)": f"/api/matches?limit=100&player={urllib.parse.quote(name)}",
        "valid=false (100)": "/api/matches?limit=100&valid=false",
    }
    print(f"matches page, {repeat} calls each (a new connection each):")
    for label, path in pages.items():
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            body = get(server.port, path)
            times.append(time.perf_counter() - started)
        shown = len(json.loads(body)["matches"])
        print(
            f"  {label:<32} best {min(times) * 1000:7.1f} ms  median "
            f"{statistics.median(times) * 1000:7.1f} ms  worst {max(times) * 1000:7.1f} ms"
            f"  ({shown} rows, {len(body):,} bytes)"
        )


# -- replays ---------------------------------------------------------------------------------------


def bench_replay(server: Server, matches: int) -> None:
    page = json.loads(get(server.port, f"/api/matches?limit={matches}"))
    ids = [m["match_id"] for m in page["matches"]]
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = KingrecServiceStub(channel)  # the same replays over gRPC, for comparison
        cpu = server.cpu()
        started = time.perf_counter()
        events = sum(
            len(response.events)
            for match_id in ids
            for response in stub.Replay(svc.ReplayRequest(match_id=match_id))
        )
        wall = time.perf_counter() - started
        cpu = server.cpu() - cpu
    print(
        f"replay over gRPC: {events:,} events of {len(ids)} matches in {wall:.2f} s = "
        f"{events / wall:,.0f} events/s (server CPU {cpu / events * 1e6:.1f} µs/event)"
    )
    for form, accept in (("NDJSON", "application/x-ndjson"), ("SSE", "text/event-stream")):
        events = 0
        cpu = server.cpu()
        started = time.perf_counter()
        for match_id in ids:
            body = get(server.port, f"/api/matches/{match_id}/replay", accept)
            if form == "NDJSON":
                lines = body.splitlines()
                events += sum(1 for line in lines if line.startswith(b'{"seq"'))
                json.loads(lines[-2])
            else:
                events += body.count(b"\nid: ") + body.startswith(b"id: ")
        wall = time.perf_counter() - started
        cpu = server.cpu() - cpu
        print(
            f"replay as {form:<6}: {events:,} events of {len(ids)} matches in {wall:.2f} s = "
            f"{events / wall:,.0f} events/s (server CPU {cpu / events * 1e6:.1f} µs/event)"
        )


# -- live viewers ----------------------------------------------------------------------------------


def _watch_request(match_id: str) -> bytes:
    return (
        f"GET /api/live/{match_id} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()


async def _viewer(
    port: int, match_id: str, got: list[tuple[int, float, bytes]], ends: list[str]
) -> None:
    """One SSE viewer: each event's number, receipt time and data line, read in chunks and
    split here (a readline per line would make the client, not the server, the bottleneck)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_watch_request(match_id))
    await writer.drain()
    ended = False
    raw = b""  # chunked transfer encoding, not yet taken apart
    text = b""  # the SSE stream, not yet split into messages
    headers = True
    while True:
        chunk = await reader.read(1 << 16)
        if not chunk:
            break
        at = time.monotonic()
        raw += chunk
        if headers:
            head, found, raw = raw.partition(b"\r\n\r\n")
            if not found:
                raw = head
                continue
            headers = False
        while True:  # whole chunks: size line, data, CRLF
            size_end = raw.find(b"\r\n")
            if size_end < 0:
                break
            size = int(raw[:size_end], 16)
            if len(raw) < size_end + 2 + size + 2:
                break
            text += raw[size_end + 2 : size_end + 2 + size]
            raw = raw[size_end + 2 + size + 2 :]
        blocks = text.split(b"\r\n\r\n")
        text = blocks.pop()
        for block in blocks:
            if block.startswith(b"id: "):
                head, _, data = block.partition(b"\r\n")
                got.append((int(head[4:]), at, data))
            elif block.startswith(b"event: end"):
                ends.append(json.loads(block.partition(b"data: ")[2])["code"])
                ended = True
        if ended:
            break
    writer.close()


def _viewers_process(port: int, match_id: str, count: int, out: Path, ready: Path) -> None:
    """Run in a child process: ``count`` viewers; each one's (seq, time) and card keys."""

    async def main() -> None:
        lists: list[list[tuple[int, float, bytes]]] = [[] for _ in range(count)]
        ends: list[str] = []
        tasks = [asyncio.create_task(_viewer(port, match_id, got, ends)) for got in lists]
        await asyncio.sleep(0.5)
        ready.write_text("ready")
        await asyncio.gather(*tasks)
        result = []
        for got in lists:
            rows = []
            for seq, at, line in got:
                key = None
                if b'"card_played"' in line:
                    played = json.loads(line[6:])["card_played"]  # b"data: {...}"
                    key = [played["deal"], played["play"]]
                rows.append([seq, at, key])
            result.append(rows)
        out.write_text(json.dumps({"rows": result, "ends": ends}))

    asyncio.run(main())


def _shares(total: int, parts: int) -> list[int]:
    return [total // parts + (n < total % parts) for n in range(parts)]


def bench_live(server: Server, viewers: int, cards_per_s: float, stalled: bool, cards: int) -> None:
    match = next(r.match for r in read_records(str(CLASSIC)) if isinstance(r, Record))
    match_id = f"bench-live-{os.getpid()}-{time.time_ns()}"
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
    stub = KingrecServiceStub(channel)
    requests = live_requests(match, svc.Pace(), match_id)
    start = next(requests)
    stub.Publish(iter([start]))  # the match exists; viewers may come
    rss_before = server.rss_mib()[0]
    out = Path(f"/tmp/bench-http-{os.getpid()}.json")
    ready = Path(f"/tmp/bench-http-{os.getpid()}.ready")
    parts = max(1, min(4, viewers // 50))  # client processes, 50 viewers or more each
    outs = [out.with_suffix(f".{n}.json") for n in range(parts)]
    readies = [ready.with_suffix(f".{n}") for n in range(parts)]
    for path in readies:
        path.unlink(missing_ok=True)
    children = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--viewers-child",
                json.dumps([server.port, match_id, share, str(o), str(r)]),
            ]
        )
        for share, o, r in zip(_shares(viewers, parts), outs, readies, strict=True)
    ]
    stuck = None
    if stalled:
        stuck = socket.create_connection(("127.0.0.1", server.port))
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.sendall(_watch_request(match_id))
    for _ in range(600):
        if all(path.exists() for path in readies):
            break
        time.sleep(0.1)
    sent: dict[tuple[int, int], float] = {}
    gap = 1 / cards_per_s

    def paced() -> Iterator[svc.PublishRequest]:
        yield svc.PublishRequest(resume=match_id)
        deal = 0
        play = 0
        due = time.monotonic()
        for request in requests:
            kind = request.WhichOneof("event")
            if kind == "deal":
                deal += 1
                play = 0
            elif kind == "card":
                if cards and len(sent) >= cards:  # enough: the match ends here
                    yield svc.PublishRequest(end=svc.LiveEnd(reason="the bench had enough"))
                    return
                due += gap
                pause = due - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                sent[(deal, play)] = time.monotonic()
                play += 1
            yield request

    cpu = server.cpu()
    started = time.monotonic()
    stub.Publish(paced())
    published = time.monotonic() - started
    for child in children:
        child.wait(timeout=600)
    cpu = server.cpu() - cpu
    rss_after, rss_peak = server.rss_mib()
    if stuck is not None:
        stuck.close()
    channel.close()
    results = [json.loads(path.read_text()) for path in outs]
    lists: list[list[list[Any]]] = [rows for result in results for rows in result["rows"]]
    ends = Counter(code for result in results for code in result["ends"])
    for path in outs + readies:
        path.unlink(missing_ok=True)
    total = max(seq for rows in lists for seq, _, _ in rows)
    in_order = all([seq for seq, _, _ in rows] == list(range(1, total + 1)) for rows in lists)
    latencies = sorted(
        at - sent[(key[0], key[1])] for rows in lists for _, at, key in rows if key is not None
    )
    p = {q: latencies[min(len(latencies) - 1, int(len(latencies) * q / 100))] for q in (50, 99)}
    delivered = sum(len(rows) for rows in lists)
    print(
        f"live: {viewers} SSE viewers{' + 1 that never reads' if stalled else ''}, "
        f"{len(sent)} cards at {cards_per_s:g}/s (published in {published:.1f} s), {total} events"
    )
    print(
        f"  every viewer got every event in order: {in_order} "
        f"({len(lists)} viewers x {total} events = {delivered:,} delivered; ends {dict(ends)})"
    )
    print(
        f"  publish -> receipt: p50 {p[50] * 1000:.1f} ms, p99 {p[99] * 1000:.1f} ms, "
        f"max {latencies[-1] * 1000:.1f} ms ({len(latencies):,} card receipts)"
    )
    print(
        f"  server RSS {rss_before:.0f} MiB before, {rss_after:.0f} MiB after "
        f"(peak of the process {rss_peak:.0f} MiB); server CPU {cpu:.2f} s = "
        f"{cpu / delivered * 1e6:.1f} µs per event delivered"
    )


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, help="the store (a kingrec ingest of many matches)")
    parser.add_argument("--repeat", type=int, default=20, help="calls per matches page")
    parser.add_argument("--replays", type=int, default=20, help="matches replayed per form")
    parser.add_argument("--viewers", type=int, default=200)
    parser.add_argument("--cards-per-s", type=float, default=100.0)
    parser.add_argument("--cards", type=int, default=0, help="publish this many (0: all)")
    parser.add_argument("--no-stalled", action="store_true", help="no viewer that never reads")
    parser.add_argument("--only", choices=["matches", "replay", "live"], action="append")
    parser.add_argument("--viewers-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.viewers_child:
        port, match_id, count, out, ready = json.loads(args.viewers_child)
        _viewers_process(port, match_id, count, Path(out), Path(ready))
        return
    if args.db is None:
        parser.error("--db is needed (python bench/bench_store.py makes a big store)")
    only = set(args.only or ["matches", "replay", "live"])
    server = Server(args.db)
    try:
        if "matches" in only:
            bench_matches(server, args.repeat)
        if "replay" in only:
            bench_replay(server, args.replays)
        if "live" in only:
            bench_live(server, args.viewers, args.cards_per_s, not args.no_stalled, args.cards)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
