"""kingrec: the record format, validator and replay tools for King (Rıfkı).

The public API, small on purpose; every name is documented::

    import kingrec

    for item in kingrec.read_records("matches.krec"):      # a path or a binary stream
        if isinstance(item, kingrec.Record):
            report = kingrec.validate(item.match)         # a MatchReport, every finding
            for deal in kingrec.replay_match(item.match):  # tricks and running totals
                ...

Records are ``kingrec.v1.record_pb2.Match`` protobuf messages; ``MatchBuilder`` (or
``build_match``) makes them from a game a client played and ``write_records`` writes them
as .krec or JSON Lines. Cards are plain int codes 0..51 (``suit * 13 + rank``; suits clubs,
diamonds, hearts, spades; ranks 2..A): ``parse_card("QS")`` and ``card_name(50) == "KS"``
convert. Seats are 0..3 in order of play. Every error kingrec raises on purpose is a
``KingrecError``.

Names are loaded on first use, so ``import kingrec`` costs next to nothing and a user of
one function loads only the modules it needs. The modules behind them (``kingrec.rules``,
``kingrec.validation``, …) hold more for those who need it.
"""

from __future__ import annotations

from importlib import import_module

# Not ``typing.TYPE_CHECKING``: importing typing would cost more than the rest of this file.
TYPE_CHECKING = False
__version__ = "0.1.0"

# Each public name and the module it comes from, loaded when first asked for.
_ORIGINS = {
    # reading, writing, validating and replaying records
    "read_records": ".api",
    "write_records": ".api",
    "validate": ".api",
    "validate_file": ".api",
    "Record": ".records",
    "Damage": ".records",
    "MatchReport": ".findings",
    "replay_match": ".replay",
    # making records and playing deals
    "MatchBuilder": ".builder",
    "DealBuilder": ".builder",
    "build_match": ".builder",
    "DealPlay": ".game",
    # cards and rules
    "parse_card": ".cards",
    "card_name": ".cards",
    "Contract": ".contracts",
    "Ruleset": ".rules",
    "preset": ".rules",
    # errors
    "KingrecError": ".errors",
    "CardError": ".errors",
    "ContractError": ".errors",
    "DamagedFileError": ".errors",
    "IllegalPlayError": ".errors",
    "JsonRecordError": ".errors",
    "LimitError": ".errors",
    "NotRecordFileError": ".errors",
    "RecordBuildError": ".errors",
    "RecordFileError": ".errors",
    "RulesetError": ".errors",
    "UnreadableFileError": ".errors",
    "UnsupportedVersionError": ".errors",
    "QueryError": ".errors",
    "QueryLimitError": ".errors",
    "QueryRefusedError": ".errors",
    "QueryRowError": ".errors",
    "StoreError": ".errors",
    "StoreLockedError": ".errors",
    "StoreVersionError": ".errors",
    "StoreWriteAbortedError": ".errors",
    # the store
    "Store": ".store",
}

__all__ = [
    "CardError",
    "Contract",
    "ContractError",
    "Damage",
    "DamagedFileError",
    "DealBuilder",
    "DealPlay",
    "IllegalPlayError",
    "JsonRecordError",
    "KingrecError",
    "LimitError",
    "MatchBuilder",
    "MatchReport",
    "NotRecordFileError",
    "QueryError",
    "QueryLimitError",
    "QueryRefusedError",
    "QueryRowError",
    "Record",
    "RecordBuildError",
    "RecordFileError",
    "Ruleset",
    "RulesetError",
    "Store",
    "StoreError",
    "StoreLockedError",
    "StoreVersionError",
    "StoreWriteAbortedError",
    "UnreadableFileError",
    "UnsupportedVersionError",
    "build_match",
    "card_name",
    "parse_card",
    "preset",
    "read_records",
    "replay_match",
    "validate",
    "validate_file",
    "write_records",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ loads these
    from collections.abc import Callable, Mapping
    from typing import Any

    from .api import read_records as read_records
    from .api import validate as validate
    from .api import validate_file as validate_file
    from .api import write_records as write_records
    from .builder import DealBuilder as DealBuilder
    from .builder import MatchBuilder as MatchBuilder
    from .builder import build_match as build_match
    from .cards import card_name as card_name
    from .cards import parse_card as parse_card
    from .contracts import Contract as Contract
    from .errors import CardError as CardError
    from .errors import ContractError as ContractError
    from .errors import DamagedFileError as DamagedFileError
    from .errors import IllegalPlayError as IllegalPlayError
    from .errors import JsonRecordError as JsonRecordError
    from .errors import KingrecError as KingrecError
    from .errors import LimitError as LimitError
    from .errors import NotRecordFileError as NotRecordFileError
    from .errors import QueryError as QueryError
    from .errors import QueryLimitError as QueryLimitError
    from .errors import QueryRefusedError as QueryRefusedError
    from .errors import QueryRowError as QueryRowError
    from .errors import RecordBuildError as RecordBuildError
    from .errors import RecordFileError as RecordFileError
    from .errors import RulesetError as RulesetError
    from .errors import StoreError as StoreError
    from .errors import StoreLockedError as StoreLockedError
    from .errors import StoreVersionError as StoreVersionError
    from .errors import StoreWriteAbortedError as StoreWriteAbortedError
    from .errors import UnreadableFileError as UnreadableFileError
    from .errors import UnsupportedVersionError as UnsupportedVersionError
    from .findings import MatchReport as MatchReport
    from .game import DealPlay as DealPlay
    from .records import Damage as Damage
    from .records import Record as Record
    from .replay import replay_match as replay_match
    from .rules import Ruleset as Ruleset
    from .rules import preset as preset
    from .store import Store as Store


def _lazy_names(
    package: str, namespace: dict[str, Any], origins: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` (PEP 562): each name of ``origins`` is
    loaded from its module (relative to ``package``) when first asked for, then kept in
    ``namespace`` (the package's globals), so later look-ups skip ``__getattr__``. Here
    because ``import kingrec`` must load nothing else; ``kingrec.container`` and
    ``kingrec_service`` use it too."""

    def __getattr__(name: str) -> Any:
        origin = origins.get(name)
        if origin is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(origin, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__


if not TYPE_CHECKING:  # hidden from type checkers, which would take any name as Any
    __getattr__, __dir__ = _lazy_names(__name__, globals(), _ORIGINS)
