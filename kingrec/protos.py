"""Where kingrec's protobuf schema lies, for tools that compile or load the ``.proto`` files.

``PROTO_DIR`` is the root of the schema's import path, laid out as in the repository's
``proto/`` folder; ``RECORD_PROTO`` is the record schema itself (``kingrec.v1.Match``)::

    from kingrec.protos import PROTO_DIR
    # protoc -I "$PROTO_DIR" --python_out=OUT kingrec/v1/record.proto

An installed wheel carries the schema as package data (``kingrec/proto/``); a source
checkout or an editable install uses the repository's ``proto/`` folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["PROTO_DIR", "RECORD_PROTO"]

_PACKAGE = Path(__file__).resolve().parent


def _proto_dir() -> Path:
    installed = _PACKAGE / "proto"
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / "proto"  # a checkout: <repository>/proto


PROTO_DIR: Final = _proto_dir()
RECORD_PROTO: Final = PROTO_DIR / "kingrec" / "v1" / "record.proto"
