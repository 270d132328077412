"""Make the README's screenshots of the web viewer (docs/img/*.png), so they can be remade.

    python docs/screenshots.py            # needs Chromium (apt-get install chromium) and
                                          # Playwright (the dev extra)

It simulates 200 classic matches into a fresh store, adds the committed samples, starts
``kingrec serve --http`` on a free port, opens the pages in Debian's Chromium at a desktop
size (and the Table at a phone's) and saves them. Nothing outside docs/img/ is written.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "img"
KINGREC = Path(sys.executable).parent / "kingrec"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
ARGS += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _run(*args: str) -> None:
    subprocess.run([str(KINGREC), *args], check=True, capture_output=True, timeout=600)


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


def _shot(page: Page, name: str) -> None:
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sims = folder / "sim.krec"
        _run("simulate", "--matches", "200", "--seed", "16", "--jobs", "0", "-o", str(sims), "-q")
        db = folder / "kingrec.duckdb"
        invalid = ROOT / "samples" / "invalid" / "must-give-penalty-card.krec"
        _run("ingest", "--db", str(db), str(ROOT / "samples" / "valid"), str(invalid), str(sims))
        process, url = _serve(db)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                desk = browser.new_page(viewport={"width": 1280, "height": 760})
                desk.goto(url + "/#/matches?limit=25")
                expect(desk.locator("table.matches tbody tr")).to_have_count(25)
                _shot(desk, "matches")
                desk.goto(url + "/#/replay/classic-0?deal=3&trick=5&card=3")
                expect(desk.locator(".trick .played")).to_have_count(3)
                _shot(desk, "table")
                desk.goto(url + "/#/replay/invalid-must-give-penalty-card?deal=2&trick=7&card=3")
                expect(desk.locator(".finding")).to_be_visible()
                _shot(desk, "table-illegal")
                desk.goto(url + "/#/stats?q=rifki-end")
                expect(desk.locator("svg.chart rect.bar").first).to_be_visible()
                _shot(desk, "stats")
                phone = browser.new_page(viewport={"width": 390, "height": 760})
                phone.goto(url + "/#/replay/classic-0?deal=3&trick=5&card=3&seat=0")
                expect(phone.locator(".trick .played")).to_have_count(3)
                _shot(phone, "table-phone")
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
