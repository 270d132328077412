"""The web viewer in a real browser: Debian's Chromium driven by Playwright, against a real
``kingrec serve --http`` on a free port over a real store. Each test checks what a person
sees: the stored matches listed, a replay's cards where the record puts them, a live match
drawn event by event, a dropped connection resumed, hostile names shown as text.

Waits are on page conditions (Playwright's ``expect``), never on fixed sleeps. Without
Chromium or Playwright the tests skip, saying which is missing (``.ci/run`` installs the
browser)."""

from __future__ import annotations

import base64
import contextlib
import json
import queue
import random
import re
import shutil
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import kingrec
from kingrec.boundary import ruleset_from_proto
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec_cli.publish import live_requests
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub
from kingrec_service.events import record_events

try:
    from playwright.sync_api import Browser, Page, expect, sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
KINGREC = Path(sys.executable).parent / "kingrec"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The flags that work on this kind of machine (no GPU, no sandbox as root, no network).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "web-test-token"
FAST = svc.Pace()

pytestmark = [
    pytest.mark.skipif(
        sync_playwright is None, reason="Playwright is not installed (pip install -e '.[dev]')"
    ),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="no Chromium: apt-get install -y chromium chromium-driver (.ci/run does)",
    ),
]

# Hostile strings: markup, a script end, a right-to-left override.
XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_SCRIPT = "</script><script>alert(2)</script>"
RTL = "\u202eevil.exe\u202c Ayşe"
HOSTILE_ID = "<img src=x onerror=alert('id')>/?#%2F" + "\u202e" + "x" * 900


# -- the server ------------------------------------------------------------------------------


class Served:
    """A ``kingrec serve --http`` process: its gRPC address and its web address."""

    def __init__(self, process: subprocess.Popen[str], grpc_port: int, http_port: int) -> None:
        self.process = process
        self.grpc = f"127.0.0.1:{grpc_port}"
        self.http_port = http_port
        self.url = f"http://127.0.0.1:{http_port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def _serve(db: Path) -> Served:
    process = subprocess.Popen(
        [
            str(KINGREC),
            "serve",
            "--port",
            "0",
            "--http",
            "127.0.0.1:0",
            "--db",
            str(db),
            "--token",
            TOKEN,
            "--grace",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    seen: list[str] = []
    grpc_port = http_port = 0
    for _ in range(20):  # the startup lines; a server that says nothing has failed
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if found := re.search(r"serving on 127\.0\.0\.1:(\d+)", line):
            grpc_port = int(found.group(1))
        if found := re.search(r"web viewer on http://127\.0\.0\.1:(\d+)/", line):
            http_port = int(found.group(1))
        if grpc_port and http_port:
            # Keep draining what it logs, so a full pipe never blocks the server.
            threading.Thread(target=process.stdout.read, daemon=True).start()
            return Served(process, grpc_port, http_port)
    process.kill()
    process.wait()
    raise AssertionError("kingrec serve --http did not start:\n" + "".join(seen))


def _hostile_match() -> pb.Match:
    """A valid short match whose every string is hostile."""
    rng = random.Random(16)
    builder = kingrec.MatchBuilder(
        [XSS_IMG, XSS_SCRIPT, RTL, "Emre " + "ş" * 300],
        "short",
        match_id=HOSTILE_ID,
        event=XSS_SCRIPT,
        tags={XSS_IMG: RTL},
    )
    for n, contract in enumerate(["koz", "koz", "kiz", "kupa", "erkek", "el almaz", "koz", "koz"]):
        deck = rng.sample(range(52), 52)
        hands = [deck[13 * seat : 13 * seat + 13] for seat in range(4)]
        deal = builder.deal(hands, n % 4, contract, trump="spades" if contract == "koz" else None)
        while not deal.over:
            deal.play(rng.choice(deal.legal_cards()))
    return builder.finish()


def _records(*paths: Path) -> list[pb.Match]:
    return [
        item.match
        for path in paths
        for item in kingrec.read_records(str(path))
        if isinstance(item, kingrec.Record)
    ]


STORED_FILES = [
    *sorted((SAMPLES / "valid").glob("*.krec")),
    SAMPLES / "invalid" / "must-give-penalty-card.krec",
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server over a store holding the valid samples, one invalid one and the hostile match."""
    folder = tmp_path_factory.mktemp("web")
    hostile = folder / "hostile.krec"
    kingrec.write_records(str(hostile), _hostile_match())
    db = folder / "kingrec.duckdb"
    ingest = subprocess.run(
        [str(KINGREC), "ingest", "--db", str(db), *map(str, STORED_FILES), str(hostile)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert ingest.returncode == 0, ingest.stderr
    served = _serve(db)
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server of its own for live matches (a finished one is stored: it would change the
    stored server's list)."""
    served = _serve(tmp_path_factory.mktemp("live") / "kingrec.duckdb")
    try:
        yield served
    finally:
        served.stop()


# -- the browser -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


class Watched:
    """A page, and everything it said that a person would notice: dialogs, script errors,
    CSP violations."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.network_cut = False  # a test that cuts connections expects the browser to say so
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda err: self.errors.append(str(err)))
        page.on("console", self._console)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _console(self, message: Any) -> None:
        if message.type != "error" or "the server responded with a status of 4" in message.text:
            return  # the browser logs a 4xx answer; the page shows it to the person as a sentence
        if self.network_cut and "net::ERR_" in message.text:
            return
        self.errors.append(message.text)


@pytest.fixture
def watched(browser: Browser) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.set_default_timeout(15_000)
    w = Watched(context.new_page())
    try:
        yield w
    finally:
        context.close()
    assert w.dialogs == [], "a dialog fired: record text ran as script"
    assert w.errors == [], "the page had errors"


def _route(match_id: str) -> str:
    return urllib.parse.quote(match_id, safe="")


def _seat_cards(page: Page, seat: int) -> list[int]:
    cards = page.locator(f".seat[data-seat='{seat}'] .hand .card:not(.back)")
    return sorted(int(c) for c in cards.evaluate_all("(ns) => ns.map((n) => n.dataset.card)"))


def _trick_cards(page: Page) -> list[tuple[int, int]]:
    """(seat, card) of each card on the trick, in order of play."""
    pairs = page.locator(".trick .played").evaluate_all(
        "(ns) => ns.map((n) => [n.dataset.seat, n.querySelector('.card').dataset.card])"
    )
    return [(int(s), int(c)) for s, c in pairs]


def _card_events(match: pb.Match) -> list[svc.CardPlayed]:
    """The library's card_played events for the record (seat, trick, position of each card)."""
    out = []
    for event in record_events(match, ruleset_from_proto(match.ruleset)):
        message = event.message()
        if message.WhichOneof("event") == "card_played":
            out.append(message.card_played)
    return out


# -- Matches ---------------------------------------------------------------------------------


def test_the_matches_page_lists_every_stored_match_and_sorts_and_filters(
    stored: Served, watched: Watched
) -> None:
    page = watched.page
    ids = {m.match_id for m in _records(*STORED_FILES)} | {HOSTILE_ID}
    page.goto(stored.url + "/#/matches")
    rows = page.locator("table.matches tbody tr")
    expect(rows).to_have_count(len(ids))
    shown = set(
        page.locator("table.matches td.id a").evaluate_all("(ns) => ns.map((n) => n.textContent)")
    )
    assert shown == ids
    expect(page.locator("tr.invalid td.id")).to_have_text(["invalid-must-give-penalty-card"])

    page.locator("th a[title='sort by deals']").click()
    expect(page.locator("th[aria-sort='ascending']")).to_have_text(re.compile("deals"))
    deals = [int(t) for t in page.locator("table.matches tbody td:nth-child(7)").all_inner_texts()]
    assert deals == sorted(deals) and deals[0] < deals[-1]
    page.locator("th a[title='sort by deals']").click()  # again: descending
    expect(page.locator("th[aria-sort='descending']")).to_have_text(re.compile("deals"))
    deals = [int(t) for t in page.locator("table.matches tbody td:nth-child(7)").all_inner_texts()]
    assert deals == sorted(deals, reverse=True)

    page.locator("th a[title='sort by date']").click()  # when each match started, in UTC
    expect(page.locator("th[aria-sort='ascending']")).to_have_text(re.compile("date"))
    dates = page.locator("table.matches tbody td.date").all_inner_texts()
    started = [
        m.metadata.start_time.ToDatetime().strftime("%Y-%m-%d %H:%M")
        for m in _records(*STORED_FILES)
        if m.metadata.HasField("start_time")
    ]
    assert sorted(d for d in dates if d) == sorted(started) and dates == sorted(dates)

    page.locator("input[name=preset]").fill("short")
    page.get_by_role("button", name="filter").click()
    short = {m.match_id for m in _records(*STORED_FILES) if m.ruleset.preset == "short"} | {
        HOSTILE_ID
    }
    expect(rows).to_have_count(len(short))
    assert "preset=short" in page.url
    page.locator("select[name=valid]").select_option("false")
    page.locator("input[name=preset]").fill("")
    page.get_by_role("button", name="filter").click()
    expect(page.locator("table.matches td.id a")).to_have_text(["invalid-must-give-penalty-card"])


def test_the_matches_page_pages_through_the_store(stored: Served, watched: Watched) -> None:
    page = watched.page
    total = len({m.match_id for m in _records(*STORED_FILES)}) + 1  # and the hostile one
    page.goto(stored.url + "/#/matches?limit=5")
    seen: list[str] = []
    for _ in range(10):  # bounded: the store holds fewer than 50 matches
        rows = page.locator("table.matches tbody")
        expect(rows.locator("tr").first).to_be_visible()
        seen += rows.locator("td.id a").evaluate_all("(ns) => ns.map((n) => n.textContent)")
        following = page.locator("a.next-page")
        if following.count() == 0:  # the pager is drawn with the rows: read off this page
            break
        shown = rows.element_handle()
        following.click()
        # The URL changes before the page is drawn again: until then the rows (and the
        # pager) are the last page's. Drawn again, they are new elements.
        page.wait_for_function("(old) => !old.isConnected", arg=shown)
    assert len(seen) == total and len(set(seen)) == total


# -- Match and Table -------------------------------------------------------------------------


def test_the_match_page_shows_players_rules_scores_and_findings(
    stored: Served, watched: Watched
) -> None:
    page = watched.page
    (match,) = _records(SAMPLES / "invalid" / "must-give-penalty-card.krec")
    page.goto(stored.url + "/#/match/" + _route(match.match_id))
    expect(page.locator("table.players td.name")).to_have_text([p.name for p in match.players])
    expect(page.locator(".ruleset li").first).to_contain_text("20 deals")
    expect(page.locator("table.score-table tbody tr")).to_have_count(len(match.deals))
    (report,) = [
        r for r in kingrec.validate_file(str(SAMPLES / "invalid" / "must-give-penalty-card.krec"))
    ]
    assert isinstance(report, kingrec.MatchReport)
    finding = report.findings[0]
    expect(page.locator(".findings .message")).to_have_text([finding.message])
    # The running totals of the last deal are the match's totals.
    last = page.locator("table.score-table tbody tr").last.locator(".running")
    totals = [int(t) for t in last.all_inner_texts()]
    assert totals == list(report_totals(match))
    page.locator(".findings a.place").click()
    expect(page).to_have_url(re.compile(r"#/replay/.*deal=2&trick=7&card=\d"))
    illegal = page.locator(".trick .played.illegal .card")
    expect(illegal).to_have_attribute("data-card", str(kingrec.parse_card("AC")))
    expect(page.locator(".finding .finding-message")).to_have_text(finding.message)
    expect(page.locator(".finding .finding-legal .card")).to_have_attribute(
        "data-card", str(kingrec.parse_card("JC"))
    )


def report_totals(match: pb.Match) -> list[int]:
    """The match's totals as the library computes them (the last deal's running totals)."""
    views = list(kingrec.replay_match(match))
    return list(views[-1].totals)


def test_par_from_a_trick_is_shown_beside_the_table_and_costly_cards_are_marked(
    stored: Served, watched: Watched
) -> None:
    page = watched.page
    match_id, trick = "classic-0", 9

    def par(deal: int) -> dict[str, Any]:
        url = (
            f"{stored.url}/api/matches/{match_id}/par?deal={deal}&from_trick={trick}&budget_ms=5000"
        )
        with urllib.request.urlopen(url, timeout=60) as answer:
            return dict(json.loads(answer.read())["deals"][0])

    # the first deal whose analysis from trick 9 finds a card that gave part of par away
    for number in range(1, 21):
        deal = par(number)
        costly = [p for p in deal.get("plays", []) if p.get("cost_units", 0) > 0]
        if deal["solved"] and costly:
            break
    else:
        pytest.fail("no deal of classic-0 has a costly card from trick 9")
    page.goto(f"{stored.url}/#/replay/{match_id}?deal={number}&trick={trick}&card=1")
    expect(page.locator(".trick .played")).to_have_count(1)
    page.locator("button.par-ask").click()
    result = page.locator(".par-result")
    expect(result).to_have_attribute("data-deal", str(number), timeout=60_000)
    assert result.get_attribute("data-solved") == "true"
    shown = page.locator(".par-table tbody td.par").all_inner_texts()
    assert shown == [str(seat["par"]) for seat in deal["seats"]]
    actual = page.locator(".par-table tbody td.actual").all_inner_texts()
    assert actual == [str(seat["actual"]) for seat in deal["seats"]]
    expect(page.locator(".par-state")).to_contain_text(f"{len(costly)} costly card(s)")
    first = costly[0]
    at = 4 * (trick - 1)  # the play the view shows: the first card of that trick
    for _ in range(first["play"] - at):
        page.locator("button.card-forward").click()
    marked = page.locator(f".trick .played.costly[data-seat='{first.get('seat', 0)}']")
    expect(marked).to_have_count(1)
    expect(marked.locator(".cost")).to_have_text(f"−{first['cost_units']}")
    assert "best:" in (marked.get_attribute("title") or "")


def test_stepping_a_replay_shows_the_records_cards_in_their_places(
    stored: Served, watched: Watched
) -> None:
    page = watched.page
    (match,) = [
        m for m in _records(SAMPLES / "valid" / "classic.krec") if m.match_id == "classic-0"
    ]
    cards = [c for c in _card_events(match) if c.deal == 3]
    deal = match.deals[2]
    hands = [set(deal.hands[13 * s : 13 * s + 13]) for s in range(4)]

    def expect_at(played: int) -> None:
        """The table after the first `played` cards of deal 3."""
        left = [set(h) for h in hands]
        for c in cards[:played]:
            left[c.seat].discard(c.card)
        for seat in range(4):
            expect(page.locator(f".seat[data-seat='{seat}'] .hand .card")).to_have_count(
                len(left[seat])
            )
            assert _seat_cards(page, seat) == sorted(left[seat])
        last = cards[played - 1]
        on_trick = [(c.seat, c.card) for c in cards[:played] if c.trick == last.trick]
        assert _trick_cards(page) == on_trick

    page.goto(stored.url + "/#/replay/classic-0?deal=3&trick=5&card=2")
    expect(page.locator(".table-info .deal-number")).to_have_text("Deal 3 of 20")
    expect(page.locator(".table-info .contract")).to_have_text("Erkek almaz")
    expect_at(4 * 4 + 2)
    page.keyboard.press("ArrowRight")
    expect(page).to_have_url(re.compile(r"deal=3&trick=5&card=3"))
    expect_at(4 * 4 + 3)
    page.keyboard.press("ArrowDown")  # to the end of the trick: its winner marked
    expect(page).to_have_url(re.compile(r"deal=3&trick=5&card=4"))
    expect_at(4 * 4 + 4)
    expect(page.locator(".trick .played.winner")).to_have_count(1)
    page.locator("button.card-back").click()
    expect(page).to_have_url(re.compile(r"deal=3&trick=5&card=3"))
    # The URL is the position: opened afresh, the page is at that card.
    url = page.url
    page.goto("about:blank")
    page.goto(url)
    expect(page.locator(".table-view")).to_be_visible()
    expect_at(4 * 4 + 3)
    page.keyboard.press("PageDown")  # the next deal, dealt and named
    expect(page.locator(".table-info .deal-number")).to_have_text("Deal 4 of 20")
    for seat in range(4):
        expect(page.locator(f".seat[data-seat='{seat}'] .hand .card")).to_have_count(13)
    expect(page.locator(".trick .played")).to_have_count(0)
    page.keyboard.press("ArrowRight")
    expect(page.locator(".trick .played")).to_have_count(1)
    page.keyboard.press("PageUp")  # to this deal's start
    expect(page.locator(".trick .played")).to_have_count(0)
    expect(page.locator(".table-info .deal-number")).to_have_text("Deal 4 of 20")
    page.keyboard.press("PageUp")  # and from there to the one before
    expect(page.locator(".table-info .deal-number")).to_have_text("Deal 3 of 20")
    expect(page).to_have_url(re.compile(r"deal=3$"))


# The app's own fold (service/web/events.js), run in the page over a stored replay's events:
# the table at the close of each trick (hands, tricks taken, who won) and of each deal (the
# running totals), as the Table draws it.
FOLD = """async (id) => {
    const m = await import("/static/events.js");
    const answer = await fetch(`/api/matches/${encodeURIComponent(id)}/replay`);
    const events = await answer.json();
    const state = m.emptyTable();
    const out = [];
    let i = 0;
    for (const stop of m.stopsOf(events)) {
        while (i <= stop.index) m.apply(state, events[i++]);
        const hands = state.hands.map((h) => [...h].sort((a, b) => a - b));
        if (stop.closesTrick) {
            out.push(["trick", stop.deal, stop.trick, state.trick.winner, hands, [...state.taken]]);
        }
        if (stop.closesDeal) out.push(["deal", stop.deal, state.dealEnded.totals]);
    }
    return out;
}"""


def test_the_table_the_page_draws_agrees_with_the_library_on_every_valid_sample(
    stored: Served, watched: Watched
) -> None:
    page = watched.page
    page.goto(stored.url + "/#/matches")
    expect(page.locator("table.matches tbody tr").first).to_be_visible()
    matches = _records(*sorted((SAMPLES / "valid").glob("*.krec")))
    assert len(matches) > 10
    for match in matches:
        want: list[Any] = []
        for view in kingrec.replay_match(match):
            left = [set(view.hands[13 * s : 13 * s + 13]) for s in range(4)]
            taken = [0, 0, 0, 0]
            for trick in view.tricks:
                for i, card in enumerate(trick.cards):
                    left[(trick.leader + i) % 4].discard(card)
                if trick.winner is None:
                    continue  # a trick the deal stopped in (abandoned, a revoke)
                taken[trick.winner] += 1
                hands = [sorted(h) for h in left]
                want.append(["trick", view.number, trick.number, trick.winner, hands, list(taken)])
            want.append(["deal", view.number, list(view.totals)])
        assert page.evaluate(FOLD, match.match_id) == want, match.match_id


def test_play_runs_the_replay_forward_and_pause_stops_it(stored: Served, watched: Watched) -> None:
    page = watched.page
    page.goto(stored.url + "/#/replay/classic-0?deal=1")
    expect(page.locator(".table-info .deal-number")).to_have_text("Deal 1 of 20")
    page.locator("select.speed").select_option("150")
    page.locator("button.play").click()
    expect(page.locator(".trick .played")).not_to_have_count(0)
    expect(page).to_have_url(re.compile(r"trick=2"))  # it goes on by itself
    page.keyboard.press(" ")
    expect(page.locator("button.play")).to_have_text("▶ play")
    stopped = page.url
    # Paused: a step by hand moves exactly one card.
    page.keyboard.press("ArrowRight")
    expect(page).not_to_have_url(stopped)


def test_one_seats_view_hides_the_other_hands(stored: Served, watched: Watched) -> None:
    page = watched.page
    page.goto(stored.url + "/#/replay/classic-0?deal=2&seat=1")
    expect(page.locator(".seat[data-seat='1'] .hand .card:not(.back)")).to_have_count(13)
    for seat in (0, 2, 3):
        expect(page.locator(f".seat[data-seat='{seat}'] .hand .card.back")).to_have_count(13)
        expect(page.locator(f".seat[data-seat='{seat}'] .hand .card:not(.back)")).to_have_count(0)
    expect(page.locator(".seat[data-seat='1']")).to_have_class(re.compile("at-bottom"))
    page.keyboard.press("ArrowRight")
    expect(page.locator(".trick .played")).to_have_count(1)
    seat = int(page.locator(".trick .played").get_attribute("data-seat") or "-1")
    if seat != 1:
        expect(page.locator(f".seat[data-seat='{seat}'] .hand .card.back")).to_have_count(12)


# -- Live ------------------------------------------------------------------------------------


class Publisher:
    """A Publish stream the test feeds one request at a time."""

    def __init__(self, address: str, match: pb.Match, live_id: str) -> None:
        self.requests = list(live_requests(match, FAST, live_id))
        self.sent = 0
        self._queue: queue.Queue[svc.PublishRequest | None] = queue.Queue()
        self.channel = grpc.insecure_channel(address)
        self.stub = KingrecServiceStub(self.channel)
        self.result: list[Any] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _feed(self) -> Iterator[svc.PublishRequest]:
        while (request := self._queue.get()) is not None:
            yield request

    def _run(self) -> None:
        try:
            self.result.append(
                self.stub.Publish(self._feed(), metadata=(("authorization", f"Bearer {TOKEN}"),))
            )
        except grpc.RpcError as err:
            self.result.append(err)

    def send(self, count: int) -> None:
        for request in self.requests[self.sent : self.sent + count]:
            self._queue.put(request)
        self.sent = min(len(self.requests), self.sent + count)

    def finish(self) -> svc.PublishResponse:
        self.send(len(self.requests))
        self._queue.put(None)
        self._thread.join(timeout=30)
        self.channel.close()
        (answer,) = self.result
        assert isinstance(answer, svc.PublishResponse), answer
        return answer


def _last_seqs(match: pb.Match) -> list[int]:
    """For each Publish request of the match (its start, each deal, each card, its end): the
    number of the last event it makes, as a replay of the record numbers them."""
    out = []
    seq = 0
    for event in record_events(match, ruleset_from_proto(match.ruleset)):
        message = event.message()
        starts = message.WhichOneof("event") in (
            "match_started",
            "deal_started",
            "card_played",
            "match_ended",
        )
        if starts and seq:
            out.append(seq)
        seq = message.seq
    out.append(seq)
    return out


def _short_match() -> pb.Match:
    (match,) = [m for m in _records(SAMPLES / "valid" / "short.krec")][:1]
    return match


def test_a_match_published_card_by_card_appears_in_a_watching_page_in_order(
    live_server: Served, watched: Watched
) -> None:
    page = watched.page
    match = _short_match()
    live_id = "live-in-order"
    publisher = Publisher(live_server.grpc, match, live_id)
    seqs = _last_seqs(match)
    cards = _card_events(match)
    publisher.send(2)  # the start and the first deal
    page.goto(live_server.url + "/#/live")
    expect(page.locator("table.live-matches td.id a")).to_have_text([live_id])
    page.locator("table.live-matches td.id a").click()
    state = page.locator(".stream-state")
    expect(state).to_have_attribute("data-state", "live")
    expect(state).to_have_attribute("data-seq", str(seqs[1]))
    for seat in range(4):
        expect(page.locator(f".seat[data-seat='{seat}'] .hand .card")).to_have_count(13)
    for n in range(1, 9):  # two tricks, card by card: each appears, in its place, in order
        publisher.send(1)
        expect(state).to_have_attribute("data-seq", str(seqs[1 + n]))
        on_trick = [(c.seat, c.card) for c in cards[:n] if c.trick == cards[n - 1].trick]
        assert _trick_cards(page) == on_trick
    answer = publisher.finish()
    assert answer.finished
    expect(state).to_have_attribute("data-state", "ended")
    expect(state).to_have_attribute("data-seq", str(seqs[-1]))
    assert state.get_attribute("data-gap") is None
    assert state.get_attribute("data-repeats") in (None, "0")
    totals = [int(t) for t in page.locator("table.scores td.total").all_inner_texts()]
    assert totals == report_totals(match)


def test_a_watching_page_says_when_the_publisher_is_gone_and_goes_on_when_it_is_back(
    live_server: Served, watched: Watched
) -> None:
    page = watched.page
    match = _short_match()
    live_id = "live-publisher-gone"
    seqs = _last_seqs(match)
    first = Publisher(live_server.grpc, match, live_id)
    first.send(6)  # the start, the first deal and four cards; then the publisher vanishes
    first._queue.put(None)
    first._thread.join(timeout=30)
    first.channel.close()
    page.goto(live_server.url + "/#/live/" + live_id)
    state = page.locator(".stream-state")
    expect(state).to_have_attribute("data-state", "waiting")
    expect(state).to_have_text(re.compile(r"^the publisher is gone: the match ends abandoned in"))
    expect(state).to_have_attribute("data-seq", str(seqs[5]))
    back = Publisher(live_server.grpc, match, live_id)  # the token-holder goes on
    back.requests = [svc.PublishRequest(resume=live_id), *first.requests[6:]]
    assert back.finish().finished
    expect(state).to_have_attribute("data-state", "ended")
    expect(state).to_have_attribute("data-seq", str(seqs[-1]))
    assert state.get_attribute("data-gap") is None
    assert state.get_attribute("data-repeats") in (None, "0")


def test_watching_a_match_that_is_not_live_says_so_and_stops_asking(
    live_server: Served, watched: Watched
) -> None:
    page = watched.page
    page.goto(live_server.url + "/#/live/" + _route(XSS_IMG))
    state = page.locator(".stream-state")
    expect(state).to_have_attribute("data-state", "error")
    expect(state).to_have_text(re.compile(r"^MATCH_NOT_FOUND: no live match"))
    assert page.locator("main img").count() == 0
    page.goto(live_server.url + "/#/live/anything?delay_ms=soon")
    expect(state).to_have_attribute("data-state", "error")
    expect(state).to_contain_text("BAD_REQUEST")


class Proxy:
    """A TCP relay between the browser and the server that the test can cut: the dropped
    connection a phone on a train has."""

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.refusing = threading.Event()
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing.is_set():
                client.close()
                continue
            server = socket.create_connection(("127.0.0.1", self.upstream))
            with self._lock:
                self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        for s in (source, target):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def drop(self) -> None:
        """Cut every open connection and refuse new ones until ``allow``."""
        self.refusing.set()
        with self._lock:
            for s in self._open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self._open = []

    def allow(self) -> None:
        self.refusing.clear()

    def close(self) -> None:
        self.listener.close()
        self.drop()


def test_a_dropped_connection_shows_reconnecting_and_resumes_without_gaps_or_repeats(
    live_server: Served, watched: Watched
) -> None:
    page = watched.page
    match = _short_match()
    live_id = "live-dropped"
    publisher = Publisher(live_server.grpc, match, live_id)
    seqs = _last_seqs(match)
    cards = _card_events(match)
    proxy = Proxy(live_server.http_port)
    watched.network_cut = True
    try:
        publisher.send(2 + 5)  # start, deal 1, five cards
        page.goto(f"http://127.0.0.1:{proxy.port}/#/live/{_route(live_id)}")
        state = page.locator(".stream-state")
        expect(state).to_have_attribute("data-seq", str(seqs[1 + 5]))
        expect(state).to_have_attribute("data-state", "live")
        proxy.drop()
        expect(state).to_have_attribute("data-state", "reconnecting")
        expect(state).to_contain_text("reconnecting")
        publisher.send(6)  # played while the viewer is away
        proxy.allow()
        expect(state).to_have_attribute("data-state", "live", timeout=30_000)
        expect(state).to_have_attribute("data-seq", str(seqs[1 + 11]))
        assert state.get_attribute("data-gap") is None
        assert state.get_attribute("data-repeats") in (None, "0")
        on_trick = [(c.seat, c.card) for c in cards[:11] if c.trick == cards[10].trick]
        assert _trick_cards(page) == on_trick
        answer = publisher.finish()
        assert answer.finished
        expect(state).to_have_attribute("data-state", "ended")
        expect(state).to_have_attribute("data-seq", str(seqs[-1]))
    finally:
        proxy.close()


# -- Stats and Validate ----------------------------------------------------------------------


def test_the_stats_page_draws_each_question_with_its_sql(stored: Served, watched: Watched) -> None:
    page = watched.page
    from kingrec.store.stats import STATS

    page.goto(stored.url + "/#/stats")
    expect(page.locator(".questions a")).to_have_count(len(STATS))
    for name in ("contracts", "points"):
        page.goto(stored.url + f"/#/stats?q={name}")
        expect(page.locator(".stat")).to_have_attribute("data-name", name)
        with urllib.request.urlopen(f"{stored.url}/api/stats/{name}") as answer:
            rows = json.load(answer)["rows"]
        assert rows
        expect(page.locator("svg.chart rect.bar")).to_have_count(len(rows))
        expect(page.locator("table.stat-rows tbody tr")).to_have_count(len(rows))
        expect(page.locator("details.sql code")).to_have_text(STATS[name].sql.strip())


def _drop_file(page: Page, name: str, data: bytes) -> None:
    """Drop a file on the drop zone, as a person dragging it from their desktop does."""
    transfer = page.evaluate_handle(
        """([name, b64]) => {
            const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
            const dt = new DataTransfer();
            dt.items.add(new File([bytes], name));
            return dt;
        }""",
        [name, base64.b64encode(data).decode()],
    )
    page.dispatch_event(".drop-zone", "drop", {"dataTransfer": transfer})


def test_the_validate_page_judges_a_dropped_or_picked_file(
    stored: Served, watched: Watched
) -> None:
    page = watched.page
    page.goto(stored.url + "/#/validate")
    bad = SAMPLES / "invalid" / "must-follow-suit.krec"
    codes = [
        f.code
        for r in kingrec.validate_file(str(bad))
        if isinstance(r, kingrec.MatchReport)
        for f in r.findings
    ]
    assert "MUST_FOLLOW_SUIT" in codes
    _drop_file(page, bad.name, bad.read_bytes())
    expect(page.locator(".verdict.invalid .code")).to_have_text(codes)
    expect(page.locator(".verdict.invalid .where")).to_contain_text(bad.name)
    expect(page.locator(".summary")).to_contain_text("1 invalid")
    page.locator("input.file-input").set_input_files(str(SAMPLES / "damaged" / "flipped-byte.krec"))
    expect(page.locator(".verdict.damaged .code")).to_have_text(["FRAME_CORRUPT"])
    expect(page.locator(".verdict.valid")).to_have_count(2)


def test_kingrec_view_opens_a_record_file_at_its_match(watched: Watched) -> None:
    bad = SAMPLES / "invalid" / "must-follow-suit.krec"
    process = subprocess.Popen(
        [str(KINGREC), "view", str(bad)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"at (http://127\.0\.0\.1:\d+/\S*)", line)
        assert found, line
        page = watched.page
        page.goto(found.group(1))
        expect(page.locator("h1 .id")).to_have_text("invalid-must-follow-suit")
        expect(page.locator(".findings .code").first).to_have_text("MUST_FOLLOW_SUIT")
        page.locator(".findings a.place").first.click()
        expect(page.locator(".trick .played.illegal")).to_have_count(1)
        expect(page.locator(".finding .finding-code")).to_have_text("MUST_FOLLOW_SUIT")
    finally:
        process.terminate()
        process.wait(timeout=20)
        if process.stdout is not None:
            process.stdout.close()


# -- Hostile content and headers -------------------------------------------------------------


def test_hostile_names_and_ids_render_as_text_and_the_layout_holds(
    stored: Served, browser: Browser
) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})  # a phone
    context.set_default_timeout(15_000)
    w = Watched(context.new_page())
    page = w.page
    try:
        for route in (
            "/#/matches",
            "/#/match/" + _route(HOSTILE_ID),
            "/#/replay/" + _route(HOSTILE_ID) + "?deal=1&trick=1&card=1",
        ):
            page.goto(stored.url + route)
            expect(page.locator("main h1")).to_be_visible()
            expect(page.locator("main .loading")).to_have_count(0)
            assert page.locator("main img, main script, main iframe").count() == 0
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{route}: the page is {width}px wide on a 390px screen"
        # The names are shown exactly as written (on the Table, by the seats).
        for seat, name in enumerate([XSS_IMG, XSS_SCRIPT, RTL]):
            expect(page.locator(f".seat[data-seat='{seat}'] .seat-name .name")).to_have_text(
                f"{name} ({seat})"
            )
        page.goto(stored.url + "/#/match/" + _route(HOSTILE_ID))
        expect(page.locator(".facts dd").filter(has_text="alert(2)")).to_have_text(XSS_SCRIPT)
        expect(page.locator(".tag")).to_have_text(f"{XSS_IMG}={RTL}")
        # A 10,000-character id: the server refuses it (aiohttp answers a request line that
        # long with a plain 400 before the API sees it), the page says so and stays narrow.
        page.goto(stored.url + "/#/match/" + "w" * 10_000)
        expect(page.locator(".error")).to_contain_text(re.compile("MATCH_NOT_FOUND|400"))
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.goto(stored.url + "/#/validate")
        long_id = _hostile_match()
        long_id.match_id = XSS_IMG + "i" * 10_000
        _drop_file(page, XSS_IMG + ".jsonl", (kingrec_jsonl(long_id) + "\n").encode())
        expect(page.locator(".verdict")).not_to_have_count(0)
        assert page.locator("main img").count() == 0
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        context.close()
    assert w.dialogs == [] and w.errors == []


def kingrec_jsonl(match: pb.Match) -> str:
    from kingrec.jsonl.write import dumps_match

    return dumps_match(match)


def test_every_response_carries_the_csp_and_no_cors(stored: Served) -> None:
    for path in ("/", "/static/app.js", "/static/app.css", "/api/matches", "/api/matches/nope"):
        request = urllib.request.Request(stored.url + path)
        try:
            with urllib.request.urlopen(request) as answer:
                headers = answer.headers
        except urllib.error.HTTPError as err:
            headers = err.headers
        csp = headers["Content-Security-Policy"] or ""
        assert "script-src 'self'" in csp and "default-src 'self'" in csp, path
        assert "unsafe-inline" not in csp
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Access-Control-Allow-Origin"] is None
