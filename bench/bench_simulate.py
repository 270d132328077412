"""How fast matches are simulated: deals per CPU second, layer by layer, old path beside new.

Run ``python bench/bench_simulate.py`` (``--help`` for the options). In one run it prints

* the per-layer breakdown in this process, one core, in µs per deal, for the two ways a
  .krec record is made: the **message** path (the bots' ``PlayedDeal`` tuples, a
  ``kingrec.v1.Match`` built from them and serialized: what ``kingrec simulate`` did before)
  and the **bytes** path (``RecordSimulator.records``: the compiled simulator writes a
  chunk's whole records itself, framed in one write). Layers: the match's head (seeds,
  random streams, metadata, ruleset), bot play, record building, writing the frames;
* ``kingrec simulate --jobs 1 -o *.krec`` end to end, as a user runs it, with the bytes path
  (the command as installed) and with the message path (the same command, its chunk
  function put back to the old one), side by side, and the start-up cost of the command;
* optionally (``--jobs2``) the command with ``--jobs 2`` and JSON Lines output;
* optionally (``--instructions``) the command's instructions under valgrind (cachegrind,
  with its branch simulator): of one match (the start-up) and of ``--instructions-matches``,
  and so the instructions and simulated branch mispredictions per deal, which do not
  depend on the machine's load.

Rates are per CPU second (``time.process_time`` in process; the command's user + system
time), the figure to compare on a shared machine; wall rates are printed beside them.

The issue's target (17, target 5): ``kingrec simulate --jobs 1`` at ≥ 100,000 deals per CPU
second.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from compiled_only import refuse_pure_twins

from kingrec import _twins, simrun
from kingrec._sim_py import streams
from kingrec.boundary import deal_to_proto
from kingrec.container import KrecWriter
from kingrec.rules import PRESETS, Ruleset
from kingrec.simulate import (
    RecordSimulator,
    _add_seats_and_rules,
    _head,
    derive_seed,
    simulate_match,
)
from kingrec.v1 import record_pb2 as pb

OLD_PATH = "--run-message-path"  # internal: run the command with the message path


def _old_chunk(
    preset: str, seed: int, start: int, stop: int, fmt: simrun.Format
) -> tuple[list[bytes], int]:
    """``kingrec.simrun.simulate_chunk`` as it was before the bytes path (d994fad)."""
    from kingrec import jsonl

    rules = PRESETS[preset]
    out: list[bytes] = []
    deals = 0
    for index in range(start, stop):
        match = simulate_match(rules, derive_seed(seed, index))
        deals += len(match.deals)
        if fmt == "krec":
            out.append(match.SerializeToString())
        else:
            out.append((jsonl.dumps_match(match) + "\n").encode("utf-8"))
    return out, deals


# -- in process, layer by layer ------------------------------------------------------------


class Layers:
    """CPU seconds per layer, summed over matches."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.seconds = dict.fromkeys(names, 0.0)
        self.deals = 0


def _message_path(rules: Ruleset, matches: int, sink: KrecWriter, layers: Layers) -> None:
    sim = _twins.ACTIVE.sim
    clock = time.process_time
    for index in range(matches):
        t0 = clock()
        seed = derive_seed(0, index)
        match = _head(rules, seed, None)
        _add_seats_and_rules(match, rules)
        rng, clock_state, first = streams(seed, True)
        t1 = clock()
        played = sim.play_match(rules, rng.getstate(), clock_state, first)
        t2 = clock()
        totals = [0, 0, 0, 0]
        for number, deal in enumerate(played, 1):
            deal_to_proto(match.deals.add(), rules, number, deal)
            totals = [t + s for t, s in zip(totals, deal.scores, strict=True)]
        match.status = pb.MATCH_STATUS_COMPLETE
        match.claimed_totals.extend(totals)
        payload = match.SerializeToString()
        t3 = clock()
        sink.write(payload)
        t4 = clock()
        s = layers.seconds
        s["head"] += t1 - t0
        s["bot play"] += t2 - t1
        s["record"] += t3 - t2
        s["writing"] += t4 - t3
        layers.deals += len(played)


_CHUNK = 64  # matches per chunk, as kingrec.simrun cuts a run


def _bytes_path(rules: Ruleset, matches: int, sink: KrecWriter, layers: Layers) -> None:
    """What ``kingrec simulate`` does now: a chunk's records written whole by the compiled
    twin (``RecordSimulator.records``: head, fixed fields and deals in one pass), framed and
    written in one call (``KrecWriter.write_all``)."""
    records = RecordSimulator(rules)
    tails = records._tails
    clock = time.process_time
    for start in range(0, matches, _CHUNK):
        t0 = clock()
        seeds = [derive_seed(0, i) for i in range(start, min(start + _CHUNK, matches))]
        t1 = clock()
        for seed in seeds:  # the bots alone (from the seeds), nothing kept
            tails.bot_play(seed, True)
        t2 = clock()
        payloads = records.records(seeds)  # the same again, writing the records
        t3 = clock()
        sink.write_all(payloads)
        t4 = clock()
        s = layers.seconds
        s["head"] += t1 - t0
        s["bot play"] += t2 - t1
        s["record"] += (t3 - t2) - (t2 - t1)  # the records less the bots' share
        s["writing"] += t4 - t3
        layers.deals += rules.deal_count * len(seeds)


def breakdown(preset: str, matches: int) -> None:
    rules = PRESETS[preset]
    names = ("head", "bot play", "record", "writing")
    paths: dict[str, Callable[[Ruleset, int, KrecWriter, Layers], None]] = {
        "message": _message_path,
        "bytes": _bytes_path,
    }
    results: dict[str, Layers] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, run in paths.items():
            layers = results[label] = Layers(names)
            with KrecWriter.open(Path(tmp) / f"{label}.krec") as sink:
                run(rules, matches, sink, layers)
    print(f"\nin process, 1 core, {matches} {preset} matches: CPU µs per deal")
    print(f"  {'layer':10} {'message':>9} {'bytes':>9}")
    for name in names:
        row = [results[p].seconds[name] / results[p].deals * 1e6 for p in paths]
        print(f"  {name:10} {row[0]:9.2f} {row[1]:9.2f}")
    totals = [sum(results[p].seconds.values()) / results[p].deals for p in paths]
    print(f"  {'total':10} {totals[0] * 1e6:9.2f} {totals[1] * 1e6:9.2f}")
    print(
        f"  deals per CPU second: message {1 / totals[0]:,.0f}, bytes {1 / totals[1]:,.0f} "
        f"({totals[0] / totals[1]:.2f}x)"
    )
    print("  (head: seeds, metadata, players and ruleset; the bytes path derives the seeds")
    print("   there and writes the rest of the head in C, in its record; it seeds its random")
    print("   streams in C, so they count in its bot play, which is TailWriter.bot_play: the")
    print("   same deals with nothing recorded; record is RecordSimulator.records less that)")


# -- the command, end to end ----------------------------------------------------------------


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(args: list[str]) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds of the process and its children, stderr)."""
    began, began_cpu = time.perf_counter(), _children_cpu()
    result = subprocess.run(args, capture_output=True, check=True)
    return time.perf_counter() - began, _children_cpu() - began_cpu, result.stderr


def command(preset: str, matches: int, jobs: int, suffix: str, old: bool) -> tuple[float, float]:
    """``kingrec simulate`` as a user runs it: (deals per wall second, per CPU second)."""
    if old:
        base = [sys.executable, __file__, OLD_PATH]
    else:
        base = [str(Path(sys.executable).parent / "kingrec")]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"bench{suffix}"
        args = [*base, "simulate", "--no-progress", "--preset", preset]
        args += ["--matches", str(matches), "--jobs", str(jobs), "-o", str(out)]
        wall, cpu, _ = _timed(args)
    deals = matches * PRESETS[preset].deal_count
    return deals / wall, deals / cpu


def start_up() -> tuple[float, float]:
    """(wall, CPU) seconds of ``kingrec simulate`` writing one short match: the fixed cost."""
    kingrec = str(Path(sys.executable).parent / "kingrec")
    with tempfile.TemporaryDirectory() as tmp:
        args = [kingrec, "simulate", "--no-progress", "--preset", "short", "-o"]
        runs = [_timed([*args, str(Path(tmp) / f"{i}.krec")]) for i in range(3)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def _cachegrind(preset: str, matches: int) -> tuple[int, int]:
    """(instructions, simulated conditional-branch mispredictions) of ``kingrec simulate
    --preset PRESET --matches MATCHES -o x.krec`` under cachegrind."""
    import re
    import shutil

    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on the PATH")
    kingrec = str(Path(sys.executable).parent / "kingrec")
    with tempfile.TemporaryDirectory() as tmp:
        args = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--branch-sim=yes"]
        args += [f"--cachegrind-out-file={tmp}/cg.out", sys.executable, kingrec, "simulate"]
        args += ["--no-progress", "-q", "--preset", preset, "--matches", str(matches)]
        args += ["-o", f"{tmp}/x.krec"]
        _, _, err = _timed(args)
    text = err.decode()
    refs = re.search(r"I\s+refs:\s+([\d,]+)", text)
    missed = re.search(r"Mispredicts:\s+[\d,]+\s+\(\s*([\d,]+) cond", text)
    if refs is None or missed is None:
        raise SystemExit(f"cannot read valgrind's summary:\n{text}")
    return int(refs.group(1).replace(",", "")), int(missed.group(1).replace(",", ""))


def instructions(preset: str, matches: int) -> None:
    one, one_missed = _cachegrind(preset, 1)
    many, many_missed = _cachegrind(preset, matches)
    deals = (matches - 1) * PRESETS[preset].deal_count
    print(f"\nvalgrind (cachegrind --branch-sim=yes), kingrec simulate -o x.krec, {preset}:")
    print(f"  1 match (the start-up): {one / 1e6:.1f} M instructions")
    print(f"  {matches} matches: {many / 1e6:.1f} M instructions")
    print(
        f"  per deal, less the start-up: {(many - one) / deals:,.0f} instructions, "
        f"{(many_missed - one_missed) / deals:,.0f} conditional branches mispredicted"
    )


def main() -> None:
    if sys.argv[1:2] == [OLD_PATH]:  # the command with the old chunk function
        from kingrec_cli.main import run

        simrun.simulate_chunk = _old_chunk
        sys.argv = ["kingrec", *sys.argv[2:]]
        run()
        return
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="classic", choices=sorted(PRESETS))
    parser.add_argument("--matches", type=int, default=3000, help="matches per measurement")
    parser.add_argument(
        "--layer-matches", type=int, default=1000, help="matches for the in-process breakdown"
    )
    parser.add_argument("--jobs2", action="store_true", help="also --jobs 2 and JSON Lines")
    parser.add_argument(
        "--instructions", action="store_true", help="also instructions per deal (valgrind)"
    )
    parser.add_argument(
        "--instructions-matches", type=int, default=300, help="matches for --instructions"
    )
    args = parser.parse_args()
    preset, n = args.preset, args.matches

    print(f"preset {preset}, {os.cpu_count()} CPU(s), simulator twin {_twins.ACTIVE.name}")
    print("(on a shared machine compare the CPU rates)")
    breakdown(preset, args.layer_matches)

    wall, cpu = start_up()
    print(f"\nstart-up: kingrec simulate of one short match {cpu:.3f} CPU s ({wall:.3f} s wall)")
    deals = n * PRESETS[preset].deal_count
    print(f"kingrec simulate --jobs 1 -o x.krec, {n} {preset} matches ({deals:,} deals):")
    rates = {}
    for label, old in (("message path", True), ("bytes path", False)):
        wall, rates[label] = command(preset, n, 1, ".krec", old)
        print(f"  {label:13} {rates[label]:9,.0f} deals per CPU second ({wall:9,.0f} wall)")
    print(f"  bytes / message: {rates['bytes path'] / rates['message path']:.2f}x")
    if args.jobs2:
        for suffix, jobs in ((".krec", 2), (".jsonl", 1), (".jsonl", 2)):
            wall, cpu = command(preset, n, jobs, suffix, False)
            print(f"  -o *{suffix:6} --jobs {jobs}: {cpu:9,.0f} per CPU s ({wall:9,.0f} wall)")
    if args.instructions:
        if args.instructions_matches < 2:
            raise SystemExit("--instructions-matches must be at least 2")
        instructions(preset, args.instructions_matches)


if __name__ == "__main__":
    main()
