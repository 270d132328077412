"""Live matches: published event by event, judged by the library as they arrive, watched by many.

A ``LiveMatch`` holds the record so far (a ``kingrec.v1.Match`` with status IN_PROGRESS),
the deal in progress (``kingrec.game.DealPlay``) and the match's event log. Every change is
checked by the library before it is made, so the record is at every moment one the validator
finds no error in:

- the start (players, ruleset) and each deal's start (number, declarer, dealer, contract
  and schedule, trumps, deck) are judged by ``kingrec.validator.validate_match`` on the
  record as it would be with the change (the compiled checker first: a clean record costs
  microseconds), so the schedule is ``kingrec.schedule.ScheduleTally``'s;
- each card is judged by ``DealPlay.push``; a refused card is then judged once more by the
  validator, for the finding a record with that card would get (code, sentence, legal cards).

A refusal raises ``RefusedError`` (or ``OutOfOrderError``) and changes nothing.

Events come from ``kingrec_service.events.EventWriter`` over ``kingrec.events.deal_events``,
so they are numbered as a replay of the finished record numbers them. The log is kept whole
for the match's life: viewers are cursors into it, not queues. Publishing an event costs the
same whatever the viewers do; a viewer that cannot keep up with the events published since it
came (more than ``max_lag`` waiting) is told so (``FellBehindError``) and resumes from where it
was, since the log still holds everything. Viewers are woken at most every ``config.flush``
seconds, so that the events published in between go to each viewer in one message: a message
costs the server about the same whatever it holds.

The ``Hub`` keeps the live matches by id, gives each one publisher at a time, abandons a match
left without a publisher for ``idle_timeout`` seconds, and hands every finished match to one
call, ``store_finished`` (the store, when there is one). Its viewers are told when the publisher
leaves or comes back (``Presence``: a message without events when nothing else is due), with
how long the match still waits. A publisher resumes from the match's last event
(``Hub.resume``: a publisher that names another event is told the right one, and nothing is
claimed), so none sends a card twice or skips one; ``published_events`` tells it which of its
messages made that event.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from kingrec._engine_types import END_INCOMPLETE
from kingrec.boundary import end_to_proto, engine_trump, ruleset_from_proto
from kingrec.cards import card_symbol
from kingrec.errors import IllegalPlayError, LimitError
from kingrec.events import DealEnded, DealEvent, deal_events
from kingrec.fastcheck import check_payload
from kingrec.findings import Finding, Severity
from kingrec.game import DealPlay
from kingrec.limits import MAX_DEALS, check_match_limits
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec.validator import contract_label, validate_match

from .errors import (
    BadRequestError,
    FellBehindError,
    InvalidMatchError,
    MatchExistsError,
    MatchNotFoundError,
    OutOfOrderError,
    PublisherBusyError,
    RefusedError,
    ResumeMismatchError,
    TooManyMatchesError,
)
from .events import Event, EventWriter, response

__all__ = [
    "Clock",
    "Hub",
    "LiveConfig",
    "LiveMatch",
    "Presence",
    "StoreFinished",
    "published_events",
]

# The one call that stores a finished live match (None: there is no store).
StoreFinished = Callable[[pb.Match], Awaitable[svc.StoreVerdict | None]]


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """When the hub's flushes and idle timeouts fall: the event loop itself (its ``time`` and
    ``call_later``) unless a test injects a clock it moves by hand. Callbacks run in the loop.
    (A viewer's broadcast delay is waited for in the loop's own time.)"""

    def time(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], object], /) -> Cancellable: ...


class Presence(NamedTuple):
    """What a viewer is told of the publisher: whether one is there, and when not, how long
    (milliseconds) the match still waits for one."""

    publisher: svc.Publisher.ValueType
    abandon_in_ms: int = 0


@dataclass(frozen=True)
class LiveConfig:
    max_lag: int = 1024  # events published since a viewer came that it may have waiting
    batch: int = 512  # events in one message to a viewer
    # Viewers are woken at most this often (seconds): events published in between travel
    # together, one message per viewer. A message costs the server ~0.1 ms whatever it holds,
    # so at 100 cards/s this keeps 100 viewers to ~2,500 messages/s instead of 10,000, for at
    # most this much added delay; events further apart than this go out at once.
    flush: float = 0.04
    idle_timeout: float = 600.0  # seconds a match may wait for a publisher, then abandoned
    retention: float = 600.0  # seconds a finished match stays watchable
    max_matches: int = 1000  # live and retained matches at once
    clock: Clock | None = None  # None: the event loop's (tests inject one they move by hand)


def _errors(match: pb.Match) -> list[Finding]:
    """The error findings of a record (the compiled checker first; most records are clean)."""
    clean, _, _ = check_payload(match.SerializeToString())
    if clean:
        return []
    return [f for f in validate_match(match).findings if f.severity is Severity.ERROR]


class LiveMatch:
    """One match being played: its record so far, the deal in progress, its events."""

    def __init__(self, header: pb.Match, config: LiveConfig | None = None) -> None:
        self.match = pb.Match()
        self.match.CopyFrom(header)
        self.match.format_version = self.match.format_version or 1
        self.match.status = pb.MATCH_STATUS_IN_PROGRESS
        self.rules = ruleset_from_proto(self.match.ruleset)
        problem = check_match_limits(self.match)
        if problem is not None:
            raise LimitError(f"the match is over one of kingrec's bounds: {problem}")
        errors = _errors(self.match)
        if errors:
            raise InvalidMatchError(errors[0])
        self.play: DealPlay | None = None  # the deal in progress
        self._think: list[int | None] = []  # its think times as published
        self._items = 0  # deal_events items of the deal in progress already written
        self._writer = EventWriter()
        self.events: list[Event] = []  # encoded once for every viewer
        self.times: list[float] = []  # clock time of each event
        config = config or LiveConfig(flush=0)
        self._clock: Clock = config.clock or asyncio.get_running_loop()
        self._changed = asyncio.Event()  # set (and replaced) when viewers are woken
        self._flush = config.flush
        # A flush comes early rather than let this many events wait (a viewer woken with more
        # than max_lag waiting would be told it fell behind).
        self._most = max(1, min(config.batch, config.max_lag // 2))
        self._flushed = -config.flush  # clock time of the last flush
        self._shown = 0  # events logged at the last flush
        self._pending: Cancellable | None = None  # the next flush, when one is due
        self._woke = -config.flush  # clock time viewers were last woken for the publisher
        self.finished = False
        self.stored: asyncio.Future[svc.StoreVerdict | None] | None = None
        self.publisher: object | None = None
        self.viewers = 0
        self.idle: Cancellable | None = None
        self.abandon_at: float | None = None  # clock time: no publisher, abandoned then
        self.presence = 0  # bumped whenever the publisher leaves or comes back
        self._log([self._writer.match_started(self.match, self.rules)])

    @property
    def match_id(self) -> str:
        return self.match.match_id

    def _log(self, events: list[Event]) -> None:
        if not events:
            return
        now = self._clock.time()
        self.events += events
        self.times += [now] * len(events)
        if now >= self._flushed + self._flush or len(self.events) - self._shown >= self._most:
            if self._pending is not None:
                self._pending.cancel()
            self._show()
        elif self._pending is None:  # else they go with the flush already due
            self._pending = self._clock.call_later(self._flushed + self._flush - now, self._show)

    def _show(self) -> None:
        """Wake every viewer waiting for events, once for all the events logged since."""
        self._pending = None
        self._flushed = self._clock.time()
        self._shown = len(self.events)
        self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def set_publisher(self, publisher: object | None, abandon_at: float | None) -> None:
        """The publisher came (an object) or left (None: abandoned at ``abandon_at``, clock
        time); viewers are told at once, or with the flush already due. It is no flush: the
        first event after it still goes out at once, and events the flush holds stay held;
        but viewers are woken for it at most once a flush, so a publisher that comes and goes
        costs them no more messages than one that publishes."""
        self.publisher, self.abandon_at = publisher, abandon_at
        self.presence += 1
        if self._pending is not None:
            return  # told with the flush already due
        now = self._clock.time()
        if now >= self._woke + self._flush:
            self._woke = now
            self._wake()
        else:
            self._pending = self._clock.call_later(self._woke + self._flush - now, self._tell)

    def _tell(self) -> None:
        """Viewers are woken for the publisher: a flush if events came meanwhile."""
        if len(self.events) > self._shown:
            self._show()
            return
        self._pending = None
        self._woke = self._clock.time()
        self._wake()

    def told(self) -> Presence:
        """What viewers are told of the publisher now."""
        if self.publisher is not None:
            return Presence(svc.PUBLISHER_PUBLISHING)
        left = 0 if self.abandon_at is None else self.abandon_at - self._clock.time()
        return Presence(svc.PUBLISHER_GONE, max(0, round(left * 1000)))

    # -- publishing ---------------------------------------------------------------------

    def add_deal(self, deal: pb.Deal) -> None:
        """Start the next deal (a Deal without plays); refused unless the record with it is
        still error-free."""
        if self.finished:
            raise OutOfOrderError(f"match {self.match_id} is over")
        if self.play is not None:
            number = len(self.match.deals)
            raise OutOfOrderError(f"deal {number} is still being played; finish it first")
        if deal.plays or deal.think_ms or deal.auto_plays or deal.HasField("revoke_play"):
            raise BadRequestError("a deal's start carries no plays: publish them as cards")
        if deal.claimed_scores or deal.end:
            raise BadRequestError("a deal's start carries no end or scores: the server adds them")
        number = len(self.match.deals) + 1
        if number > MAX_DEALS:
            raise LimitError(f"the match holds {MAX_DEALS} deals; at most {MAX_DEALS} are allowed")
        tentative = pb.Match()
        tentative.CopyFrom(self.match)
        added = tentative.deals.add()
        added.CopyFrom(deal)
        added.number = deal.number or number
        added.end = pb.DEAL_END_ABANDONED  # a deal not played yet stops here, for now
        problem = check_match_limits(tentative)
        if problem is not None:
            raise LimitError(f"the deal is over one of kingrec's bounds: {problem}")
        errors = _errors(tentative)
        if errors:
            raise RefusedError(errors[0])
        added.end = pb.DEAL_END_UNSPECIFIED
        try:
            play = DealPlay(
                self.rules, added.hands, added.declarer, added.contract, engine_trump(added)
            )
        except ValueError as exc:  # the validator refuses all of these first
            raise BadRequestError(f"deal {number} cannot be played: {exc}") from None
        self.match.deals.append(added)
        self.play, self._think, self._items = play, [], 0
        self._write_deal()

    def play_card(self, card: svc.LiveCard) -> None:
        """The card the seat to play plays; refused (with the validator's finding) unless
        legal."""
        play = self.play
        if play is None:
            raise OutOfOrderError(
                f"match {self.match_id} is over" if self.finished else "no deal is being played"
            )
        deal = self.match.deals[-1]
        seat = play.to_play
        if card.HasField("seat") and card.seat != seat:
            raise OutOfOrderError(f"seat {card.seat} played, but it is seat {seat}'s turn")
        try:
            play.push(card.card)
        except IllegalPlayError as exc:
            raise RefusedError(self._refusal(deal, card.card, seat, exc)) from None
        deal.plays += bytes([card.card])
        self._think.append(card.think_ms if card.HasField("think_ms") else None)
        if any(t is not None for t in self._think):
            del deal.think_ms[:]
            deal.think_ms.extend(t or 0 for t in self._think)
        if card.auto_play:
            deal.auto_plays.append(len(deal.plays) - 1)
        if play.over:
            deal.end = end_to_proto(play.end)
            self.play = None
        self._write_deal()

    def _refusal(self, deal: pb.Deal, card: int, seat: int, exc: IllegalPlayError) -> Finding:
        """The finding a record with this card would get; the engine's verdict when the
        validator cannot place one (a byte that is no card)."""
        number, index = len(self.match.deals), len(deal.plays)
        trick = index // 4 + 1
        if card < 52:
            tentative = pb.Match()
            tentative.CopyFrom(self.match)
            last = tentative.deals[-1]
            last.plays += bytes([card])
            last.end = pb.DEAL_END_ABANDONED
            for f in validate_match(tentative).findings:
                if f.severity is Severity.ERROR and f.deal == number and f.play == index:
                    return f
        what = card_symbol(card) if card < 52 else f"card code {card}"
        head = f"Deal {number} ({contract_label(deal.contract)}), trick {trick}"
        return Finding(
            exc.verdict or "ILLEGAL_PLAY",
            Severity.ERROR,
            f"{head}: seat {seat} may not play {what} ({exc}).",
            deal=number,
            trick=trick,
            seat=seat,
            card=card,
            play=index,
            legal=exc.legal or None,
        )

    def _write_deal(self, *, stopping: bool = False) -> None:
        """Write the events of the current deal that are not written yet."""
        number = len(self.match.deals)
        deal = self.match.deals[-1]
        items: list[DealEvent] = list(deal_events(deal, self.rules, number=number))
        last = items[-1]
        if isinstance(last, DealEnded):
            if last.end == END_INCOMPLETE and not stopping:
                items.pop()  # the deal goes on
            else:
                del deal.claimed_scores[:]
                deal.claimed_scores.extend(last.scores)
        events: list[Event] = []
        for item in items[self._items :]:
            events += self._writer.deal_event(deal, number, item)
        self._items = len(items)
        self._log(events)

    def end(self, end: svc.LiveEnd) -> None:
        """End the match: COMPLETE (refused unless every deal was played) or ABANDONED (the
        deal in progress stops there)."""
        if self.finished:
            raise OutOfOrderError(f"match {self.match_id} is over")
        status = end.status
        if status == pb.MATCH_STATUS_UNSPECIFIED:
            played = len(self.match.deals) >= self.rules.deal_count and self.play is None
            status = pb.MATCH_STATUS_COMPLETE if played else pb.MATCH_STATUS_ABANDONED
        if status not in (pb.MATCH_STATUS_COMPLETE, pb.MATCH_STATUS_ABANDONED):
            raise BadRequestError("a match ends COMPLETE or ABANDONED")
        if status == pb.MATCH_STATUS_COMPLETE:
            if self.play is not None:
                number = len(self.match.deals)
                raise OutOfOrderError(f"deal {number} is still being played; finish it first")
            tentative = pb.Match()
            tentative.CopyFrom(self.match)
            tentative.status = pb.MATCH_STATUS_COMPLETE
            errors = _errors(tentative)
            if errors:
                raise RefusedError(errors[0])
        self._finish(status, end.reason)

    def abandon(self, reason: str) -> None:
        """Abandon the match (no publisher came back, the server is stopping)."""
        if not self.finished:
            self._finish(pb.MATCH_STATUS_ABANDONED, reason)

    def _finish(self, status: pb.MatchStatus.ValueType, reason: str) -> None:
        if self.play is not None:
            self.match.deals[-1].end = pb.DEAL_END_ABANDONED
            self.play = None
            self._write_deal(stopping=True)
        self.match.status = status
        self.match.status_reason = reason
        self.match.claimed_totals.extend(self._writer.totals)
        self.finished = True
        self._log([self._writer.match_ended(self.match)])

    # -- watching -------------------------------------------------------------------------

    def _due(self, delay: float) -> int:
        """How many events are at least ``delay`` seconds old."""
        if delay <= 0:
            return len(self.events)
        return bisect.bisect_right(self.times, self._clock.time() - delay)

    def follow(
        self,
        after: int,
        delay: float,
        config: LiveConfig,
        stopping: asyncio.Event,
    ) -> AsyncGenerator[tuple[int, int, bool, Presence | None]]:
        """The events after the first ``after`` (0: a snapshot of all so far first), in
        batches, each ``delay`` seconds after it happened, until the match ends: ``(start,
        end, is_snapshot, presence)``, the batch being ``events[start:end]`` (see
        ``encoded``) and ``presence`` what to tell of the publisher (None: nothing new). The
        first batch tells it, and so does the first after it changed: a batch without events
        when none is due.

        A ``resume_from`` past the last event is refused at once (``BadRequestError``), so a
        viewer is told before anything is sent. The batches raise ``FellBehindError`` when
        more than ``config.max_lag`` events published since the viewer came are waiting for
        it. Once ``stopping`` is set, the delay no longer holds back the end of the match."""
        if after > len(self.events):
            raise BadRequestError(
                f"resume_from {after} is past the match's last event ({len(self.events)})"
            )
        return self._follow(after, delay, config, stopping)

    async def _follow(
        self, after: int, delay: float, config: LiveConfig, stopping: asyncio.Event
    ) -> AsyncGenerator[tuple[int, int, bool, Presence | None]]:
        self.viewers += 1
        told = -1  # the presence last told to this viewer

        def news() -> Presence | None:
            nonlocal told
            if told == self.presence or self.finished:
                return None
            told = self.presence
            return self.told()

        try:
            live_from = len(self.events)  # events from here on were published while watching
            cursor = after
            if after == 0:  # the snapshot: at least one message, so the viewer knows it is in
                due = self._due(delay)
                while True:
                    end = min(due, cursor + config.batch)
                    yield cursor, end, True, news()
                    cursor = end
                    if cursor >= due:
                        break
            while True:
                # what the last flush showed: a viewer woken for the publisher between flushes
                # gets the events published since with the next flush, as the others do
                ready = self._due(0 if stopping.is_set() else delay)
                due = min(ready, self._shown)
                if cursor < due:
                    if due - max(cursor, live_from) > config.max_lag:
                        raise FellBehindError(
                            f"the viewer fell more than {config.max_lag} events behind match "
                            f"{self.match_id}; watch again with resume_from={cursor}",
                            cursor,
                        )
                    end = min(due, cursor + config.batch)
                    yield cursor, end, False, news()
                    cursor = end
                    continue
                if self.finished and cursor == len(self.events):
                    return
                presence = news()
                if presence is not None:  # nothing due, but the publisher came or went
                    yield cursor, cursor, False, presence
                    continue
                await self._wait(ready, delay)
        finally:
            self.viewers -= 1

    async def _wait(self, due: int, delay: float) -> None:
        """Until viewers are woken (a flush, the publisher came or went) or the next event
        falls due (``due`` are, by the delay). (A stopping server ends every match, which adds
        an event.)"""
        changed = self._changed
        if due < len(self.events):
            timeout = max(0.0, self.times[due] + delay - self._clock.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), timeout)
        else:
            await changed.wait()

    def encoded(
        self, start: int, end: int, seat: int | None, snapshot: bool, presence: Presence | None
    ) -> bytes:
        """The WatchResponse holding ``events[start:end]`` (as ``seat`` sees them), encoded."""
        body = response(self.events[start:end], seat)
        if snapshot:
            body += b"\x10\x01"  # field 2, snapshot = true
        if presence is not None:  # fields 3 and 4, rare: through the message
            body += svc.WatchResponse(
                publisher=presence.publisher, abandon_in_ms=presence.abandon_in_ms
            ).SerializeToString()
        return body

    def summary(self) -> svc.MatchSummary:
        return svc.MatchSummary(
            match_id=self.match_id,
            status=self.match.status,
            preset=self.match.ruleset.preset,
            players=self.match.players,
            deals=len(self.match.deals),
            valid=True,
            totals=self._writer.totals,
            source="live",
            viewers=self.viewers,
            start_time=self.match.metadata.start_time
            if self.match.metadata.HasField("start_time")
            else None,
        )


async def _no_store(match: pb.Match) -> svc.StoreVerdict | None:
    return None


class Hub:
    """The live matches of a server, by id."""

    def __init__(self, config: LiveConfig, store_finished: StoreFinished | None = None) -> None:
        self.config = config
        self.store_finished = store_finished or _no_store
        self.matches: dict[str, LiveMatch] = {}
        self.stopping = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, header: pb.Match, publisher: object) -> LiveMatch:
        """A new live match from its header (a Match without deals), claimed by
        ``publisher``."""
        if not header.match_id:
            raise BadRequestError("a live match needs a match_id")
        if header.deals or header.claimed_totals:
            raise BadRequestError(
                "a live match starts without deals or totals: publish them as they happen"
            )
        if header.status not in (pb.MATCH_STATUS_UNSPECIFIED, pb.MATCH_STATUS_IN_PROGRESS):
            raise BadRequestError("a live match starts IN_PROGRESS (or with no status)")
        existing = self.matches.get(header.match_id)
        if existing is not None:
            waiting = ""
            if existing.publisher is None and not existing.finished:
                waiting = (
                    ", waiting for its publisher: resume it (a first message resume; kingrec "
                    "publish --resume), or end it; it is abandoned in "
                    f"{existing.told().abandon_in_ms / 1000:.0f} s unless one comes"
                )
            raise MatchExistsError(
                f"match {header.match_id} is already live on this server{waiting}"
            )
        if len(self.matches) >= self.config.max_matches:
            raise TooManyMatchesError(
                f"this server holds {self.config.max_matches} live matches already"
            )
        live = LiveMatch(header, self.config)
        self.matches[live.match_id] = live
        self.claim(live, publisher)
        return live

    def list(self, limit: int, after: str) -> svc.ListMatchesResponse:
        """A page of the live matches, by id: the first ``limit`` after ``after``."""
        matches = sorted(self.matches.values(), key=lambda live: live.match_id)
        page = [m for m in matches if m.match_id > after][: limit + 1]
        more = len(page) > limit
        page = page[:limit]
        return svc.ListMatchesResponse(
            matches=[m.summary() for m in page],
            next_page_token=page[-1].match_id if more else "",
        )

    def get(self, match_id: str) -> LiveMatch:
        live = self.matches.get(match_id)
        if live is None:
            raise MatchNotFoundError(f"no live match {match_id!r} on this server")
        return live

    def claim(self, live: LiveMatch, publisher: object) -> None:
        """Make ``publisher`` the one stream that may publish to ``live``."""
        if live.finished:
            raise OutOfOrderError(f"match {live.match_id} is over")
        if live.publisher is not None:
            raise PublisherBusyError(f"another stream is publishing match {live.match_id}")
        if live.idle is not None:
            live.idle.cancel()
            live.idle = None
        live.set_publisher(publisher, None)

    def resume(self, match_id: str, publisher: object, resume_from: int | None) -> LiveMatch:
        """``publisher`` goes on with a live match from its last event, which it names as
        ``resume_from`` (None: unchecked); refused, with the right one, when it is not."""
        live = self.get(match_id)
        if live.finished:
            raise OutOfOrderError(f"match {match_id} is over")
        last = len(live.events)
        if resume_from is not None and resume_from != last:
            raise ResumeMismatchError(
                f"match {match_id}'s last event is {last}, not {resume_from}: resume from "
                f"{last}, with the message that follows it",
                last,
            )
        self.claim(live, publisher)
        return live

    def release(self, live: LiveMatch, publisher: object) -> None:
        """``publisher`` is done; an unfinished match waits ``idle_timeout`` for another."""
        if live.publisher is not publisher:
            return
        if live.finished or self.stopping.is_set():
            live.publisher = None  # nothing to tell viewers: the match ends, or has ended
            return
        clock = self.config.clock or asyncio.get_running_loop()
        timeout = self.config.idle_timeout
        live.set_publisher(None, clock.time() + timeout)
        gone = live.presence  # a publisher coming back changes it: this timer is then stale
        live.idle = clock.call_later(timeout, lambda: self._spawn_abandon(live, gone))

    def _spawn_abandon(self, live: LiveMatch, gone: int) -> None:
        task = asyncio.ensure_future(self._abandon_idle(live, gone))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _abandon_idle(self, live: LiveMatch, gone: int) -> None:
        if live.presence == gone and live.publisher is None and not live.finished:
            live.idle = None
            live.abandon(f"no publisher for {self.config.idle_timeout:g} s")
            await self.finish(live)

    async def finish(self, live: LiveMatch) -> svc.StoreVerdict | None:
        """Store a finished match (once, however often asked) and keep it watchable for
        ``retention`` seconds; what storing it did (None: no store)."""
        if live.stored is None:
            live.stored = asyncio.ensure_future(self.store_finished(live.match))
            asyncio.get_running_loop().call_later(
                self.config.retention, self._forget, live.match_id, live
            )
        return await asyncio.shield(live.stored)

    def _forget(self, match_id: str, live: LiveMatch) -> None:
        if self.matches.get(match_id) is live:
            del self.matches[match_id]

    async def close(self) -> None:
        """The server is stopping: abandon and store every unfinished match; viewers get the
        rest of their match at once and end."""
        self.stopping.set()
        for live in list(self.matches.values()):
            if live.idle is not None:
                live.idle.cancel()
            if not live.finished:
                live.abandon("the server shut down")
                await self.finish(live)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def published_events(requests: Iterable[svc.PublishRequest]) -> list[int]:
    """The match's last event after each message of a Publish stream that begins with
    ``start``, as a server numbers them (its own ``LiveMatch``): which of a publisher's
    messages made event N, for a publisher that resumes. Raises what the server would refuse."""

    async def number() -> list[int]:
        live: LiveMatch | None = None
        counts: list[int] = []
        for request in requests:
            kind = request.WhichOneof("event")
            if live is None:
                if kind != "start":
                    raise BadRequestError("the stream to number must begin with start")
                live = LiveMatch(request.start, LiveConfig(flush=0))
            elif kind == "deal":
                live.add_deal(request.deal)
            elif kind == "card":
                live.play_card(request.card)
            elif kind == "end":
                live.end(request.end)
            else:
                raise BadRequestError(f"{kind} comes only as the first message of a stream")
            counts.append(len(live.events))
        return counts

    return asyncio.run(number())
