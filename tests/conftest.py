"""Shared fixtures: every engine and simulator test runs on both twins."""

from __future__ import annotations

import signal
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

from kingrec import _twins

# Property tests judge what the code does, not how fast a shared CI machine runs it: no
# per-example deadline (hangs are caught by the time-bounded tests of tests/test_limits.py).
settings.register_profile("kingrec", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("kingrec")

# A run started in the background (`cmd &`, some CI runners) inherits SIGINT ignored, and so
# would every command a test starts: the Ctrl-C tests would test nothing. A handled signal is
# reset to the default on exec, so the commands start as they would from a terminal.
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


@pytest.fixture
def par_twin(twins: _twins.Twins) -> ModuleType:
    """A par solver twin: ``kingrec.analysis._par_py`` or ``kingrec.analysis._par_c``."""
    return twins.par
