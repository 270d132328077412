"""The store's column builder, pure Python: the readable twin of ``kingrec._columns_c``.

``ColumnBuilder.add`` decodes one serialized match, replays its deals through
``kingrec.events.deal_events`` (on the pure-Python engine) and appends its rows: the
match's own row, its players, deals, tricks and plays, and its bytes in pieces. ``take``
hands every column over as bytes laid out exactly as the compiled builder lays them out
(``kingrec.store.columns`` describes the layout), so the two give identical tables.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

from .. import _engine_py
from .._engine_types import END_PLAYING, VERDICT_NAMES
from ..boundary import engine_trump, replayable
from ..contracts import Contract
from ..events import CardPlayed, DealEnded, TrickWon, deal_events
from ..rules import Ruleset
from ..v1 import record_pb2 as pb
from .packed import pack
from .schema import RECORD_CHUNK

__all__ = ["BUILDS_WITHOUT_GIL", "ColumnBuilder"]

# Whether ``add_many`` lets go of the GIL (the compiled twin's does): only then is a batch
# worth building in another thread while it is judged.
BUILDS_WITHOUT_GIL = False

NONE8 = 255  # the null sentinel of a UTINYINT column
END_UNPLAYABLE = 6
NO_TIME = -(1 << 63)
NO_THINK = 0xFFFFFFFF
_VERDICT = {name: code for code, name in enumerate(VERDICT_NAMES)}

# column -> array typecode (the C layout: native byte order); the *_code columns are packed
# as kingrec.store.packed.PACKED lays them out, held_* are 52-bit card sets (0: not a deck)
_TYPES = {
    "matches": {
        "match_key": "Q", "ruleset": "I", "format_version": "I", "status": "B",
        "start_time": "q", "deals": "H", "total_0": "i", "total_1": "i", "total_2": "i",
        "total_3": "i",
    },
    "players": {"match_key": "Q", "seat": "I"},
    "deals": {
        "match_key": "Q", "deal": "H", "contract": "B", "declarer": "B", "dealer": "B",
        "trump": "B", "playable": "B", "tricks": "B", "plays": "B", "plays_after_end": "H",
        "ended": "B", "end_trick": "B", "revoker": "B", "score_0": "i", "score_1": "i",
        "score_2": "i", "score_3": "i", "held_0": "Q", "held_1": "Q", "held_2": "Q",
        "held_3": "Q", "trump_length": "B",
    },
    # deal_code and deal_end: one per deal with rows, its code and the rows that end its run
    "tricks": {"deal_code": "Q", "trick_code": "Q", "points": "i", "deal_end": "q"},
    "plays": {"deal_code": "Q", "play_code": "Q", "deal_end": "q"},
    "records_base": {"match_key": "Q", "chunk": "I"},
}  # fmt: skip
_STRINGS = {
    "matches": ("match_id", "status_reason", "event", "site", "client_name", "client_version"),
    "players": ("player_id", "name", "seat_name"),
    "records_base": ("bytes",),  # offsets 64 bits wide (columns._BYTES)
}
_WIDE = {("records_base", "bytes")}


class ColumnBuilder:
    """Rows of many matches, gathered column by column until ``take`` (see the module doc).

    ``resolver(raw_ruleset_bytes)`` gives ``Ruleset.core_params()`` of a ruleset or None;
    this twin resolves rulesets itself and only uses the resolver to agree on which ones
    can be applied.
    """

    def __init__(self, resolver: Callable[[bytes], object]) -> None:
        self.resolver = resolver
        self.rulesets: list[bytes] = []
        self._index: dict[bytes, int] = {}
        self._rules: list[Ruleset | None] = []
        self._start()

    def _start(self) -> None:
        self._cols = {t: {c: array(k) for c, k in cols.items()} for t, cols in _TYPES.items()}
        self._str: dict[str, dict[str, list[bytes]]] = {
            t: {c: [] for c in cols} for t, cols in _STRINGS.items()
        }
        self._rows = dict.fromkeys(_TYPES, 0)

    def _ruleset(self, match: pb.Match) -> int:
        from ..boundary import ruleset_from_proto

        raw = match.ruleset.SerializeToString() if match.HasField("ruleset") else b""
        found = self._index.get(raw)
        if found is None:
            rules: Ruleset | None = None
            if self.resolver(raw) is not None:
                rules = ruleset_from_proto(match.ruleset)
            found = self._index[raw] = len(self.rulesets)
            self.rulesets.append(raw)
            self._rules.append(rules)
        return found

    def add(self, payload: bytes, match_key: int) -> int:
        """Append one match's rows; its ruleset's index in ``rulesets``."""
        match = pb.Match.FromString(payload)
        which = self._ruleset(match)
        rules = self._rules[which]
        m, ms = self._cols["matches"], self._str["matches"]
        meta = match.metadata
        status = int(match.status)
        m["match_key"].append(match_key)
        m["ruleset"].append(which)
        m["format_version"].append(match.format_version)
        m["status"].append(status if 0 <= status <= 3 else 0)
        has_start = match.HasField("metadata") and meta.HasField("start_time")
        m["start_time"].append(meta.start_time.seconds if has_start else NO_TIME)
        m["deals"].append(len(match.deals))
        for name, text in zip(
            _STRINGS["matches"],
            (match.match_id, match.status_reason, meta.event, meta.site, meta.client_name,
             meta.client_version),
            strict=True,
        ):  # fmt: skip
            ms[name].append(text.encode("utf-8"))
        for player in match.players:
            self._cols["players"]["match_key"].append(match_key)
            self._cols["players"]["seat"].append(player.seat)
            for name, text in zip(
                _STRINGS["players"], (player.id, player.name, player.seat_name), strict=True
            ):
                self._str["players"][name].append(text.encode("utf-8"))
            self._rows["players"] += 1
        totals = [0, 0, 0, 0]
        for number, deal in enumerate(match.deals, 1):
            scores = self._deal(deal, match_key, number, rules)
            totals = [a + b for a, b in zip(totals, scores, strict=True)]
        for s in range(4):
            m[f"total_{s}"].append(totals[s])
        self._rows["matches"] += 1
        chunks = self._cols["records_base"]
        for n, start in enumerate(range(0, len(payload) or 1, RECORD_CHUNK)):
            chunks["match_key"].append(match_key)
            chunks["chunk"].append(n)
            self._str["records_base"]["bytes"].append(payload[start : start + RECORD_CHUNK])
            self._rows["records_base"] += 1
        return which

    def add_many(self, payloads: list[bytes], keys: list[int]) -> list[int]:
        """``add`` of each payload with its key, in order; the positions of those left to the
        twin (none: this is the twin every record can be left to)."""
        if len(keys) != len(payloads):
            raise ValueError(f"add_many: {len(payloads)} payloads but {len(keys)} keys")
        for payload in payloads:  # refused before any row, as the compiled twin does
            if type(payload) is not bytes:
                raise TypeError(f"add_many: payloads are bytes, not {type(payload).__name__}")
        if any(not 0 <= key < 1 << 64 for key in keys):
            raise OverflowError("add_many: a key is not a 64-bit unsigned number")
        for payload, key in zip(payloads, keys, strict=True):
            self.add(payload, key)
        return []

    def _deal(
        self, deal: pb.Deal, key: int, number: int, rules: Ruleset | None
    ) -> tuple[int, int, int, int]:
        d = self._cols["deals"]
        contract = int(deal.contract) if int(deal.contract) in Contract._value2member_map_ else 0
        trump = engine_trump(deal)
        hands = deal.hands
        hands_ok = len(hands) == 52
        suits = [0] * 16
        if hands_ok:
            for i, card in enumerate(hands):
                if card < 52:
                    suits[(i // 13) * 4 + card // 13] += 1
        # Each seat's cards as 52 bits, when the deal is 52 distinct cards (else 0).
        deck = hands_ok and sorted(hands) == list(range(52))
        held = [sum(1 << c for c in hands[13 * s : 13 * s + 13]) if deck else 0 for s in range(4)]
        playable = rules is not None and replayable(deal)
        scores = (0, 0, 0, 0)
        tricks = consumed = after = end_trick = 0
        ended, revoker = END_UNPLAYABLE, NONE8
        if playable:
            assert rules is not None
            deal_code = pack(
                "deal_code",
                {"match_key": key, "deal": number, "contract": contract, "trump": trump + 1},
            )
            tricks, consumed, ended, revoker, scores, end_trick = self._replay(
                deal, number, rules, deal_code
            )
            after = len(deal.plays) - consumed
        declarer = deal.declarer
        row = {
            "match_key": key,
            "deal": number,
            "contract": contract,
            "declarer": declarer if declarer <= 3 else NONE8,
            "dealer": deal.dealer if deal.HasField("dealer") and deal.dealer <= 3 else NONE8,
            "trump": trump if trump >= 0 else NONE8,
            "playable": int(playable),
            "tricks": tricks,
            "plays": consumed,
            "plays_after_end": after,
            "ended": ended,
            "end_trick": end_trick,
            "revoker": revoker,
            "score_0": scores[0],
            "score_1": scores[1],
            "score_2": scores[2],
            "score_3": scores[3],
            **{f"held_{s}": held[s] for s in range(4)},
            "trump_length": (
                suits[declarer * 4 + trump] if trump >= 0 and hands_ok and declarer <= 3 else NONE8
            ),
        }
        for name, value in row.items():
            d[name].append(value)
        self._rows["deals"] += 1
        return scores

    def _replay(
        self, deal: pb.Deal, number: int, rules: Ruleset, deal_code: int
    ) -> tuple[int, int, int, int, tuple[int, int, int, int], int]:
        p, t = self._cols["plays"], self._cols["tricks"]
        plays_before, tricks_before = self._rows["plays"], self._rows["tricks"]
        think, autos = list(deal.think_ms), set(deal.auto_plays)
        plays: list[dict[str, int]] = []  # packed once the deal is over (took comes later)
        trick: list[dict[str, int]] = []
        tricks = end_trick = 0
        ended, consumed, revoker, scores = END_PLAYING, 0, NONE8, (0, 0, 0, 0)
        for event in deal_events(deal, rules, number=number, engine=_engine_py):
            if isinstance(event, CardPlayed):
                if event.position == 0:
                    trick = []
                end_trick = event.trick
                i = event.play
                play = {
                    "card": event.card, "seat": event.seat, "play": i,
                    "legal": event.legal.bit_count(), "took": 7, "auto": int(i in autos),
                    "broke": _VERDICT[event.broke] if event.broke else 0,
                    "think": (think[i] + 1) & NO_THINK if i < len(think) else 0,
                }  # fmt: skip
                plays.append(play)
                trick.append(play)
            elif isinstance(event, TrickWon):
                for play in trick:
                    play["took"] = event.winner
                cards = sum(card << (6 * n) for n, card in enumerate(event.cards))
                facts = {
                    "cards": cards, "trick": event.trick, "leader": event.leader,
                    "winner": event.winner, "units": event.units,
                }  # fmt: skip
                t["trick_code"].append(pack("trick_code", facts))
                t["points"].append(event.points)
                tricks = event.trick
                self._rows["tricks"] += 1
            elif isinstance(event, DealEnded):
                ended, consumed, scores = event.end, event.consumed, event.scores
                revoker = event.revoker if event.revoker >= 0 else NONE8
        for play in plays:
            p["play_code"].append(pack("play_code", play))
        self._rows["plays"] += len(plays)
        for name, before in (("plays", plays_before), ("tricks", tricks_before)):
            if self._rows[name] > before:  # the deal's run (none without rows: runs are not empty)
                self._cols[name]["deal_code"].append(deal_code)
                self._cols[name]["deal_end"].append(self._rows[name])
        return tricks, consumed, ended, revoker, scores, end_trick

    def take(self) -> dict[str, dict[str, object]]:
        """Every column gathered so far, as bytes by table and name, and start afresh."""
        out: dict[str, dict[str, object]] = {}
        for table, cols in self._cols.items():
            out[table] = {name: col.tobytes() for name, col in cols.items()}
            out[table]["rows"] = self._rows[table]
        for table, strings in self._str.items():
            for name, values in strings.items():
                offsets = array("q" if (table, name) in _WIDE else "i", [0])
                for v in values:
                    offsets.append(offsets[-1] + len(v))
                out[table][name] = (offsets.tobytes(), b"".join(values))
        self._start()
        return out

    def take_rulesets(self) -> list[bytes]:
        """The distinct raw rulesets met since the last call (the ``ruleset`` column of the
        matches taken indexes this list), and start a new list."""
        met = self.rulesets
        self.rulesets, self._index, self._rules = [], {}, []
        return met
