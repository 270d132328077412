"""Shared fixtures: every engine and simulator test runs on both twins."""

from __future__ import annotations

import signal
from types import ModuleType

import pytest

from kingrec import _twins

# Started in the background by a shell without job control (``nohup pytest &``, some CI
# runners), the suite inherits SIGINT ignored, and so would every kingrec it starts: the tests
# that press Ctrl-C would wait in vain. A handled signal is reset to the default at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _twin_params() -> list[object]:
    params: list[object] = [pytest.param(_twins.PYTHON, id="python")]
    if _twins.COMPILED is None:
        params.append(pytest.param(None, id="cython", marks=pytest.mark.skip("not built")))
    else:
        params.append(pytest.param(_twins.COMPILED, id="cython"))
    return params


@pytest.fixture(params=_twin_params())
def twins(request: pytest.FixtureRequest) -> _twins.Twins:
    """A set of twins: the pure-Python references or the compiled ones."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def twin(twins: _twins.Twins) -> ModuleType:
    """An engine twin: ``kingrec._engine_py`` or ``kingrec._engine_c``."""
    return twins.engine
