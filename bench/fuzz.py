"""Fuzz kingrec with as many generated hostile inputs as you like.

    python bench/fuzz.py --cases 100000 --seed 0 --jobs 2 --cli

Case ``i`` of seed ``S`` is drawn by ``tests/corpus/hostile.py`` from ``random.Random("S:i")``
(so ``--seed S --case i`` reproduces it alone) and judged by ``tests/corpus/judge.py``: only
documented errors and reports, the same reports from the compiled and the pure-Python twins,
the same records read, a lossless conversion both ways, within a time bound per case. With
``--cli``, every ``--cli-every``-th case also goes through the installed ``kingrec`` script
(``validate --json`` on both twins, whose outputs must be equal, and ``show --hands``): never
exit 3 or a traceback.

Prints cases/s as it goes and, at the end, the cases per kind, the slowest case and each
worker's peak RSS. A failing case is written to ``--out`` (default bench/out/fuzz/) as
``KIND-SEED-I.SUFFIX`` with the problems beside it in ``.txt``; the exit status is 1 if any
case failed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from corpus.hostile import KINDS, make_case  # noqa: E402
from corpus.judge import (  # noqa: E402
    CASE_SECONDS,
    CaseTimeout,
    cli_problems,
    judge_file,
    run_cli,
    time_bound,
)

_WORKDIR: Path | None = None


def _peak_mib() -> float:
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if "VmHWM" in line) / 1024
    except (OSError, StopIteration):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cli(path: Path) -> list[str]:
    problems: list[str] = []
    outputs = []
    for pure in (False, True):
        args = ["validate", "--json", str(path)]
        status, out, err = run_cli(args, pure=pure, timeout=CASE_SECONDS * 3)
        problems += cli_problems(args, status, err)
        outputs.append((status, [json.loads(line) for line in out.splitlines() if line]))
    if outputs[0] != outputs[1]:
        problems.append("kingrec validate --json: the twins' outputs differ")
    args = ["show", str(path), "--hands"]
    status, _, err = run_cli(args, timeout=CASE_SECONDS * 3)
    problems += cli_problems(args, status, err)
    return problems


def judge_case(job: tuple[int, int, bool, bool, str | None]) -> dict[str, Any]:
    """Make and judge case ``index`` of ``seed``: its kind, size, seconds and problems."""
    seed, index, thorough, cli, kind = job
    global _WORKDIR
    if _WORKDIR is None:
        _WORKDIR = Path(tempfile.mkdtemp(prefix="kingrec-fuzz-"))
    for old in _WORKDIR.iterdir():
        old.unlink()
    case = make_case(random.Random(f"{seed}:{index}"), kind)
    path = _WORKDIR / f"case{case.suffix}"
    path.write_bytes(case.data)
    start = time.perf_counter()
    try:
        with time_bound():
            problems = judge_file(str(path), _WORKDIR, thorough=thorough)
    except CaseTimeout as exc:
        problems = [str(exc)]
    except Exception as exc:  # the judge's own error is a failure too, shown as such
        problems = [f"the judge raised {type(exc).__name__}: {exc}"]
    if cli:
        try:
            problems += _cli(path)
        except Exception as exc:
            problems.append(f"running the CLI raised {type(exc).__name__}: {exc}")
    return {
        "index": index,
        "kind": case.kind,
        "size": len(case.data),
        "seconds": time.perf_counter() - start,
        "problems": problems,
        "data": case.data if problems else b"",
        "suffix": case.suffix,
        "peak": _peak_mib(),
        "pid": os.getpid(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="how many cases")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the cases")
    parser.add_argument("--case", type=int, help="judge only case CASE of the seed")
    parser.add_argument("--kind", choices=sorted(KINDS), help="only cases of this kind")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--cli", action="store_true", help="also run the kingrec script")
    parser.add_argument("--cli-every", type=int, default=20, help="with --cli: every Nth case")
    parser.add_argument("--quick", action="store_true", help="the test suite's quick judge")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "fuzz")
    args = parser.parse_args()
    indices = [args.case] if args.case is not None else list(range(args.cases))
    jobs = [
        (args.seed, i, not args.quick, args.cli and i % args.cli_every == 0, args.kind)
        for i in indices
    ]
    kinds: Counter[str] = Counter()
    failures = 0
    slowest: dict[str, Any] = {"seconds": 0.0}
    peaks: dict[int, float] = {}
    start = last = time.perf_counter()
    with multiprocessing.Pool(args.jobs) as pool:
        results = pool.imap_unordered(judge_case, jobs, chunksize=8)
        for done, result in enumerate(results, 1):
            kinds[result["kind"]] += 1
            peaks[result["pid"]] = result["peak"]
            if result["seconds"] > slowest["seconds"]:
                slowest = result
            if result["problems"]:
                failures += 1
                args.out.mkdir(parents=True, exist_ok=True)
                name = f"{result['kind']}-{args.seed}-{result['index']}"
                (args.out / f"{name}{result['suffix']}").write_bytes(result["data"])
                (args.out / f"{name}.txt").write_text("\n".join(result["problems"]) + "\n")
                print(f"FAIL case {result['index']} ({result['kind']}): "
                      f"{result['problems'][0][:300]}", flush=True)  # fmt: skip
                print(f"  reproduce: python bench/fuzz.py --seed {args.seed} "
                      f"--case {result['index']}; input in {args.out / name}"
                      f"{result['suffix']}", flush=True)  # fmt: skip
            now = time.perf_counter()
            if now - last > 30 or done == len(jobs):
                last = now
                print(f"{done}/{len(jobs)} cases, {failures} failed, "
                      f"{done / (now - start):.1f} cases/s", flush=True)  # fmt: skip
    seconds = time.perf_counter() - start
    print(f"\n{len(jobs)} cases in {seconds:.0f} s ({len(jobs) / seconds:.1f} cases/s, "
          f"{args.jobs} worker(s)), {failures} failed")  # fmt: skip
    print("per kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    if "kind" in slowest:
        print(f"slowest: case {slowest['index']} ({slowest['kind']}, {slowest['size']} bytes) "
              f"{slowest['seconds']:.2f} s")  # fmt: skip
    print(f"largest worker peak RSS: {max(peaks.values(), default=0):.0f} MiB")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
