"""Where the service ends and the library begins: the library never imports grpc (nor
aiohttp), the service's messages mirror the library's values, and every library error has
its status."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from pathlib import Path

import grpc

import kingrec.errors
from kingrec.boundary import ruleset_from_proto
from kingrec.errors import RulesetError
from kingrec.findings import Finding
from kingrec.jsonl import JsonLimitError
from kingrec.records import Damage, read_records
from kingrec.v1 import service_pb2 as svc
from kingrec_service import errors
from kingrec_service.events import record_events

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def test_importing_every_kingrec_module_imports_no_grpc_nor_click_nor_aiohttp() -> None:
    script = textwrap.dedent(
        """
        import importlib, pkgutil, sys
        import kingrec
        names = [m.name for m in pkgutil.walk_packages(kingrec.__path__, "kingrec.")
                 if m.name != "kingrec.__main__"]  # python -m kingrec: the command line
        for name in names:
            importlib.import_module(name)
        assert len(names) > 30, names
        faces = ("grpc", "click", "aiohttp", "aiohttp_sse")
        print(sorted(m for m in sys.modules if m.split(".")[0] in faces))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_finding_message_has_every_field_of_the_librarys_finding() -> None:
    library = {f.name for f in dataclasses.fields(Finding)}
    message = {f.name for f in svc.Finding.DESCRIPTOR.fields}
    assert library <= message


def test_every_library_error_maps_to_a_status_that_is_not_internal() -> None:
    classes = [
        getattr(kingrec.errors, name)
        for name in kingrec.errors.__all__
        if isinstance(getattr(kingrec.errors, name), type)
    ]
    classes += [
        JsonLimitError,
        *(getattr(errors, n) for n in errors.__all__ if n.endswith("Error")),
    ]
    for cls in classes:
        assert issubclass(cls, kingrec.errors.KingrecError)
        code = errors.status_of(cls.__new__(cls))
        assert code not in (None, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), cls
    assert errors.status_of(ValueError("a bug")) is None


def test_events_encoded_by_hand_are_protobufs_own_encoding() -> None:
    """Cards and tricks are encoded without building messages (kingrec_service.events):
    every event of every sample, in every view, is byte for byte what protobuf writes."""
    checked = 0
    for path in sorted(SAMPLES.glob("*/*.krec")):
        if "damaged" in path.parts:
            continue
        for record in read_records(str(path)):
            if isinstance(record, Damage):
                continue
            try:
                rules = ruleset_from_proto(record.match.ruleset)
            except RulesetError:
                continue
            for event in record_events(record.match, rules):
                for data in (event.data, *(event.views or ())):
                    parsed = svc.ReplayResponse.FromString(data)
                    assert len(parsed.events) == 1
                    assert parsed.SerializeToString() == data, (path, event.seq)
                    assert parsed.events[0].seq == event.seq
                    assert parsed.events[0].WhichOneof("event") == event.kind
                checked += 1
    assert checked > 20_000
