"""Building a record from a game a client played: ``MatchBuilder`` and ``build_match``.

A client hands over what happened at the table — the players, the ruleset, and per deal the
hands, the declarer, the contract, the trumps and the cards in order — and gets back a
complete ``kingrec.v1.Match``: deals numbered, dealers set by the ruleset's dealer rule, each
deal's end and scores computed, the match totals and status filled in, and the ruleset spelled
out in full. Everything is checked as it comes in, so a record the builder returns is one the
validator accepts without an error::

    b = MatchBuilder(["Ayşe", "Mehmet", "Zeynep", "Emre"], "short")
    d = b.deal(hands, declarer=0, contract="koz", trump="S")
    d.play("AS")  # ... every card, in order of play
    ...
    match = b.finish()  # or b.abandon("Emre left the table") for an unfinished match

``build_match`` does the same in one call from a list of deals. Cards are card names
(``"QS"``, ``"10H"``, ``"♠Q"``) or card codes (0..51); contracts are names (``"koz"``,
``"kiz"``, ``"Kız almaz"``) or ``Contract``; trumps are suit names (``"S"``, ``"spades"``,
``"♠"``) or suit numbers 0..3 (clubs, diamonds, hearts, spades).

What the builder refuses, each naming the deal (1-based) and the play (0-based, as in the
record and the validator's findings):

* ``IllegalPlayError`` — a card the rules do not allow now, with the rule it breaks
  (``verdict``) and the cards that were legal (``legal``);
* ``RecordBuildError`` — anything else that cannot make a valid record: hands that do not
  partition the deck, a declarer the rotation does not give, a contract the schedule does not
  allow, koz without trumps or trumps outside koz, a card played after the deal ended, think
  times for some plays but not others, a new deal before the last one is over, more deals
  than the ruleset has, finishing a match with deals missing;
* ``LimitError`` — a name, tag or reason over one of the bounds of ``kingrec.limits``;
* ``RulesetError`` — an unknown preset name.

A failed call changes nothing: the client may correct the input and call again. Think times
are recorded as given; one over the ruleset's clock on a play not marked as auto-played is
what happened at the table, so the record keeps it and the validator warns (``OVER_TIME``).
"""

from .deal import DealBuilder
from .inputs import DealInput, PlayerInfo
from .match import MatchBuilder, build_match

__all__ = ["DealBuilder", "DealInput", "MatchBuilder", "PlayerInfo", "build_match"]
