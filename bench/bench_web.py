"""The web viewer as a browser sees it: how fast the Matches page renders over a big store,
and how fast a stored replay's events reach the page.

    python bench/bench_web.py [--matches 100000] [--db STORE] [--runs 20]

Builds a store of ``--matches`` simulated classic matches (or takes ``--db``, an existing
one; building 100,000 takes a few minutes), starts ``kingrec serve --http`` on a free port
and drives Debian's Chromium (Playwright; the dev extra) on loopback:

* Matches: the time from asking for the page (a route change in a loaded app, and a cold
  load of the whole app) to its table of 100 rows drawn, median and worst of ``--runs``.
  Target <= 300 ms on a 100,000-match store.
* Replay: a stored match's events fetched by the page as the app fetches them (one JSON
  array) and as an SSE stream through ``EventSource``, unpaced: events/s, median of
  ``--runs``. Target >= 20,000 events/s.

Figures are wall-clock on a shared machine: the server, the browser and this script share
its cores.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from compiled_only import refuse_pure_twins
from playwright.sync_api import Page, sync_playwright

KINGREC = Path(sys.executable).parent / "kingrec"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
ARGS += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]

# In the page: clear the app's main, change the route, and time until the table is drawn.
ROUTE_TIME = """async (route) => {
    const main = document.getElementById("main");
    main.replaceChildren();
    const t0 = performance.now();
    location.hash = route;
    await new Promise((done) => {
        const check = () => {
            // The count line is drawn with the table, in the same replace.
            const drawn = main.querySelector("table.matches tbody tr");
            if (drawn && main.querySelector("p.count")) done();
            else requestAnimationFrame(check);
        };
        check();
    });
    return performance.now() - t0;
}"""

JSON_REPLAY = """async (id) => {
    const t0 = performance.now();
    const events = await (await fetch(`/api/matches/${encodeURIComponent(id)}/replay`)).json();
    return [events.length, performance.now() - t0];
}"""

SSE_REPLAY = """(id) => new Promise((done, fail) => {
    let n = 0;
    const t0 = performance.now();
    const source = new EventSource(`/api/matches/${encodeURIComponent(id)}/replay`);
    source.onmessage = () => { n += 1; };
    source.addEventListener("end", () => { source.close(); done([n, performance.now() - t0]); });
    source.onerror = () => { source.close(); fail(new Error("the stream failed")); };
})"""


def _build(folder: Path, matches: int) -> Path:
    sims = folder / "sim.krec"
    db = folder / "kingrec.duckdb"
    print(f"simulating and storing {matches:,} classic matches…", flush=True)
    subprocess.run(
        [str(KINGREC), "simulate", "--matches", str(matches), "--jobs", "0", "-o", str(sims), "-q"],
        check=True,
    )
    subprocess.run(
        [str(KINGREC), "ingest", "--db", str(db), str(sims), "--no-progress"], check=True
    )
    sims.unlink()
    return db


def _serve(db: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [str(KINGREC), "serve", "--port", "0", "--http", "127.0.0.1:0", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    for _ in range(20):
        line = process.stdout.readline()
        if found := re.search(r"web viewer on (http://127\.0\.0\.1:\d+)/", line):
            return process, found.group(1)
    process.kill()
    raise SystemExit("kingrec serve --http did not start")


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values):.0f} ms, worst {max(values):.0f} ms"


def _matches_page(page: Page, url: str, runs: int) -> None:
    for label, route in [
        ("all matches", "#/matches"),
        ("valid=true", "#/matches?valid=true"),
        ("preset=classic, sorted by deals", "#/matches?preset=classic&sort=deals"),
    ]:
        page.goto(url + "/" + route)
        page.wait_for_selector("table.matches tbody tr")
        times = [
            page.evaluate(ROUTE_TIME, f"{route}{'&' if '?' in route else '?'}run={i}")
            for i in range(runs)
        ]
        print(f"Matches page ({label}), route change to 100 rows drawn: {_ms(times)}")
    cold = []
    for _ in range(min(runs, 10)):
        page.goto("about:blank")
        page.goto(url + "/#/matches")
        # (An upper bound: the time to notice the table is in it. wait_for_function would
        # need eval, which the viewer's CSP forbids.)
        page.wait_for_selector("main p.count")
        cold.append(page.evaluate("performance.now()"))
    print(f"Matches page, cold load of the app to 100 rows drawn: {_ms(cold)}")


def _server_only(url: str, ids: list[str], runs: int) -> None:
    """The same JSON replays fetched by this script (no browser): what the server and the
    loopback cost, to tell them from what the page adds."""
    rates = []
    for i in range(runs):
        path = f"/api/matches/{urllib.parse.quote(ids[i % len(ids)], safe='')}/replay"
        t0 = time.perf_counter()
        with urllib.request.urlopen(url + path) as answer:
            count = len(json.load(answer))
        rates.append(count / (time.perf_counter() - t0))
    print(
        f"Replay, the same JSON fetched without a browser: median "
        f"{statistics.median(rates):,.0f} events/s, worst {min(rates):,.0f} events/s"
    )


def _replay(page: Page, url: str, runs: int) -> None:
    ids = page.evaluate(
        "async () => (await (await fetch('/api/matches?limit=50')).json())"
        ".matches.map((m) => m.match_id)"
    )
    for label, script in [
        ("JSON array (as the app fetches)", JSON_REPLAY),
        ("SSE via EventSource", SSE_REPLAY),
    ]:
        rates = []
        total = 0
        for i in range(runs):
            count, ms = page.evaluate(script, ids[i % len(ids)])
            total += count
            rates.append(count / (ms / 1000))
        print(
            f"Replay to the page, {label}: median {statistics.median(rates):,.0f} events/s, "
            f"worst {min(rates):,.0f} events/s ({total / runs:.0f} events a match)"
        )
    _server_only(url, ids, runs)


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=100_000)
    parser.add_argument("--db", type=Path, help="an existing store (else one is built)")
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = options.db or _build(Path(tmp), options.matches)
        process, url = _serve(db)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(url + "/#/matches")
                _matches_page(page, url, options.runs)
                _replay(page, url, options.runs)
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
