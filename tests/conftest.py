"""Shared fixtures: every engine test runs on both twins."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from kingrec import _engine_py


def _twins() -> list[object]:
    params: list[object] = [pytest.param(_engine_py, id="python")]
    try:
        compiled = importlib.import_module("kingrec._engine_c")
    except ImportError:
        params.append(pytest.param(None, id="cython", marks=pytest.mark.skip("not built")))
    else:
        params.append(pytest.param(compiled, id="cython"))
    return params


@pytest.fixture(params=_twins())
def twin(request: pytest.FixtureRequest) -> ModuleType:
    """An engine twin: the pure-Python reference or the compiled one."""
    return request.param  # type: ignore[no-any-return]
