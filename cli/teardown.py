"""Whether ``kingrec`` may end without the interpreter's teardown, as the command said.

A command that leaves the teardown nothing worth doing says so here, and the console
script (``kingrec_cli.main.run``) reads it once, when the command is over:

- ``ALWAYS``: a command that opened a gRPC channel. Its C core can still be finishing in
  threads of its own, and finalizing its objects under them has hung a client that had
  printed its last line (grpc/grpc#40620 and kin); the command closed its channels itself.
- ``ON_SUCCESS``: a simulation whose output is complete and closed (the teardown would only
  spend CPU freeing what the process held), a server that stopped cleanly (every query
  ended, the store committed and closed; the gRPC teardown once kept a stopped server from
  exiting). A run that failed takes the usual way out.
- ``validate``, once its report is out (whatever its exit status: 0, 1 or 2; its workers
  closed and joined), says ``ALWAYS``: the teardown would spend some 30 ms freeing the
  run's modules and its set of records seen, serial time in a run of a second (issue 17).
  Interrupted or failed before its summary, it takes the usual way out.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["ALWAYS", "ON_SUCCESS", "needless", "skip"]

ALWAYS: Literal["always"] = "always"
ON_SUCCESS: Literal["on success"] = "on success"
When = Literal["always", "on success"]

_when: When | None = None  # what the command said, if it said anything


def needless(when: When) -> None:
    """Say that the teardown is needless ``when`` (``ALWAYS`` outweighs ``ON_SUCCESS``)."""
    global _when
    if _when != ALWAYS:
        _when = when


def skip(ended_well: bool) -> bool:
    """Whether the run, over (``ended_well``: exit status 0), may skip the teardown."""
    return _when == ALWAYS or (_when == ON_SUCCESS and ended_well)
