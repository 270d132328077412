"""Start-up: a command loads what it uses and nothing else.

Each test runs the command line's own entry point (what the installed ``kingrec`` script
calls) in a fresh interpreter and lists, at exit, every module that was loaded. Which
modules a run loads does not depend on the machine's speed: these tests time nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kingrec._twins import COMPILED
from kingrec.container import read_frames

# Runs the command line as the ``kingrec`` script does, then writes the loaded modules' names.
# -I: neither the working directory nor PYTHON* variables decide which code is measured.
# A run that ends well may skip the interpreter's teardown (os._exit): the listing is written
# then too.
_RUN = """
import atexit, json, os, sys
out, sys.argv = sys.argv[1], ["kingrec", *sys.argv[2:]]
def listing():
    with open(out, "w") as f:
        f.write(json.dumps(sorted(sys.modules)))
def exit_at_once(code, _exit=os._exit):
    listing()
    _exit(code)
os._exit = exit_at_once
atexit.register(listing)
from kingrec_cli.startup import run
run()
"""

# What ``kingrec simulate -o FILE.krec`` must never load: it writes records and reads none,
# and shows no bar when standard error is not a terminal (here it is a pipe).
NOT_FOR_SIMULATE = (
    "kingrec.container.reader",  # the container's reader
    "kingrec.jsonl",  # JSON Lines: not written to a .krec
    "kingrec.validation",  # the validator and its judges
    "kingrec.fastcheck",
    "kingrec.judges",
    "kingrec.records",
    "kingrec.store",
    "rich",  # no bar is drawn, and the summary line is plain text
    "grpc",
    "duckdb",
    "aiohttp",
)


def loaded_by(tmp_path: Path, *args: str, pure: bool = False) -> set[str]:
    """The modules a run of ``kingrec ARGS`` loaded (it must succeed)."""
    listing = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KINGREC_")}
    if pure:
        env["KINGREC_PURE_PYTHON"] = "1"
    result = subprocess.run(
        [sys.executable, "-I", "-c", _RUN, str(listing), *args],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    return set(json.loads(listing.read_text()))


@pytest.mark.parametrize("pure", [False, True], ids=["cython", "python"])
def test_simulate_to_a_krec_file_never_loads_the_reader_the_validator_or_the_bar(
    tmp_path: Path, pure: bool
) -> None:
    out = tmp_path / "one.krec"
    loaded = loaded_by(tmp_path, "simulate", "--matches", "1", "-o", str(out), pure=pure)
    pulled = {m for m in loaded for bad in NOT_FOR_SIMULATE if m == bad or m.startswith(bad + ".")}
    assert pulled == set()
    # ...and it did its work: the match is in the file.
    assert "kingrec.container.writer" in loaded
    with out.open("rb") as stream:
        assert len(list(read_frames(stream))) == 1


# What the compiled simulator's run into a .krec file must not load either: the reference
# simulator twin, its bots and the game they play through. (The reference engine is loaded:
# the compiled engine, which kingrec._twins loads, falls back on it for odd input.)
REFERENCE_TWINS = ("kingrec._sim_py", "kingrec.bots", "kingrec.game")


@pytest.mark.skipif(COMPILED is None, reason="the compiled twins are not built")
def test_the_compiled_simulator_into_a_krec_file_loads_no_reference_twin(tmp_path: Path) -> None:
    out = tmp_path / "one.krec"
    loaded = loaded_by(tmp_path, "simulate", "--matches", "2", "-o", str(out))
    assert {m for m in REFERENCE_TWINS if m in loaded} == set()
    assert "kingrec._sim_c" in loaded  # ...and the compiled twin wrote the matches
    with out.open("rb") as stream:
        assert len(list(read_frames(stream))) == 2


def test_simulate_with_a_bar_asked_for_loads_the_bar(tmp_path: Path) -> None:
    # The other side of the test above: the listing does see a module loaded late, on use.
    out = tmp_path / "one.krec"
    loaded = loaded_by(tmp_path, "simulate", "--progress", "-o", str(out))
    assert "rich.progress" in loaded
    assert "kingrec.container.reader" not in loaded


def test_simulate_to_json_lines_loads_the_json_writer_but_not_the_container_reader(
    tmp_path: Path,
) -> None:
    out = tmp_path / "one.jsonl"
    loaded = loaded_by(tmp_path, "simulate", "-o", str(out))
    assert "kingrec.jsonl" in loaded
    assert "kingrec.container.reader" not in loaded
    assert json.loads(out.read_text().splitlines()[0])["match_id"].startswith("sim-classic-")


def test_importing_the_container_for_its_layout_loads_neither_reader_nor_writer() -> None:
    code = (
        "import sys; from kingrec.container import MAGIC, FILE_HEADER_SIZE; "
        "print([m for m in ('kingrec.container.reader', 'kingrec.container.writer') "
        "if m in sys.modules])"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_container_loads_its_reader_and_writer_names_on_first_use() -> None:
    import kingrec.container as container
    from kingrec.container import reader, writer

    assert container.KrecWriter is writer.KrecWriter
    assert container.read_frames is reader.read_frames
    assert set(container.__all__) <= set(dir(container))
    with pytest.raises(AttributeError, match="no attribute 'read_everything'"):
        _ = container.read_everything  # type: ignore[attr-defined]


MESSAGES = [
    "simulated 5 matches (100 deals) in 0.01 s, 9000 deals/s",
    "a [bold]name[/bold] in brackets \\[x]",  # markup is not applied
    "Ayşe's ♦A, 東京, trailing spaces   ",
    "a tab\there",  # rich expands tabs
    "carriage\rreturn, bell\a, form feed\f",  # rich strips these
    "an escape \x1b[31m and a NUL \x00",
    "two\nlines",
]


@pytest.mark.parametrize("message", MESSAGES)
def test_a_message_is_written_as_rich_writes_it_whether_or_not_rich_is_loaded(
    message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console
    from rich.markup import escape

    from kingrec_cli.terminal import Terminal, shown

    by_rich = io.StringIO()  # control characters are shown as escapes (test_hostile_text)
    Console(file=by_rich, highlight=False, emoji=False, soft_wrap=True).print(
        escape(shown(f"kingrec: {message}"))
    )
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    Terminal().note(message)
    assert stderr.getvalue() == by_rich.getvalue()


# What ``kingrec validate FILE.krec`` of valid records must not load on one job: its text
# report is one plain line, and nothing is split across processes.
NOT_FOR_VALIDATE = ("kingrec.jsonl", "rich", "multiprocessing", "kingrec.workers")
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "valid" / "classic.krec"


def test_validate_of_valid_records_on_one_job_loads_neither_json_nor_rich_nor_a_pool(
    tmp_path: Path,
) -> None:
    loaded = loaded_by(tmp_path, "validate", str(SAMPLE))
    pulled = {m for m in loaded for bad in NOT_FOR_VALIDATE if m == bad or m.startswith(bad + ".")}
    assert pulled == set()
    assert "kingrec.fastcheck" in loaded  # ...and it did judge the records


def test_validate_with_jobs_or_json_loads_the_workers_or_the_json_writer(tmp_path: Path) -> None:
    # The other side of the test above: its workers are forks on pipes, no multiprocessing.
    with_jobs = loaded_by(tmp_path, "validate", "-j", "2", str(SAMPLE))
    assert "kingrec.forked" in with_jobs
    assert not any(m == "multiprocessing" or m.startswith("multiprocessing.") for m in with_jobs)
    assert "kingrec.jsonl" in loaded_by(tmp_path, "validate", "--all", "--json", str(SAMPLE))


@pytest.mark.parametrize("line", [*MESSAGES, "checked 2 match(es), 40 deal(s)", ""])
def test_a_report_line_is_written_as_rich_writes_it_whether_or_not_rich_is_loaded(
    line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console
    from rich.markup import escape

    from kingrec_cli.terminal import Terminal, shown

    by_rich = io.StringIO()
    Console(file=by_rich, highlight=False, emoji=False, soft_wrap=True).print(escape(shown(line)))
    stdout = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    Terminal().line(line)
    assert stdout.getvalue() == by_rich.getvalue()


def test_kingrec_help_lists_every_command_without_importing_one(tmp_path: Path) -> None:
    loaded = loaded_by(tmp_path, "--help")
    from kingrec_cli.main import COMMANDS

    assert {module for module in COMMANDS.values() if module in loaded} == set()
    assert {"grpc", "duckdb", "aiohttp", "rich"} & {m.split(".")[0] for m in loaded} == set()


@pytest.mark.parametrize("limit", [20, 45, 70, 120, 400])
def test_the_help_list_says_of_each_command_what_its_own_help_says(limit: int) -> None:
    import click

    from kingrec_cli.main import COMMANDS, SUMMARIES, main

    assert SUMMARIES.keys() == COMMANDS.keys()
    ctx = click.Context(main)
    for name, summary in SUMMARIES.items():
        command = main.get_command(ctx, name)
        assert command is not None and not command.hidden and not command.deprecated
        listed = click.Command(name, help=summary).get_short_help_str(limit)
        assert listed == command.get_short_help_str(limit), name


def test_kingrec_help_lists_the_commands_as_click_itself_would() -> None:
    import click
    from click.testing import CliRunner

    from kingrec_cli.main import main

    for width in (60, 80):
        listed = CliRunner().invoke(main, ["--help"], terminal_width=width)
        ctx = click.Context(main, terminal_width=width)
        by_click = ctx.make_formatter()
        click.Group.format_commands(main, ctx, by_click)  # which imports every command
        assert listed.exit_code == 0
        assert "Commands:\n  validate  Check" in by_click.getvalue()
        assert by_click.getvalue() in listed.output


_MARK_EXIT_AT_ONCE = """
import os, sys
mark, sys.argv = sys.argv[1], ["kingrec", *sys.argv[2:]]
def exit_at_once(code, _exit=os._exit):
    open(mark, "w").write(str(code))
    _exit(code)
os._exit = exit_at_once
from kingrec_cli.startup import run
run()
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_simulation_that_ends_well_skips_the_teardown_with_its_output_whole(
    tmp_path: Path, jobs: str
) -> None:
    mark, out = tmp_path / "mark", tmp_path / "five.krec"
    args = ["simulate", "--matches", "5", "--jobs", jobs, "-o", str(out)]
    result = subprocess.run(
        [sys.executable, "-I", "-c", _MARK_EXIT_AT_ONCE, str(mark), *args],
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert mark.read_text() == "0"
    assert result.stderr.decode().startswith("simulated 5 matches (100 deals)")
    with out.open("rb") as stream:
        assert len(list(read_frames(stream))) == 5
    # JSON Lines on standard output: every line out before the process ends.
    result = subprocess.run(
        [sys.executable, "-I", "-c", _MARK_EXIT_AT_ONCE, str(mark), *args[:-1], "-"],
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0 and len(result.stdout.splitlines()) == 5


def test_a_simulation_that_fails_ends_through_the_usual_teardown(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            _MARK_EXIT_AT_ONCE,
            str(mark),
            "simulate",
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        check=False,
    )
    assert result.returncode == 2 and b"is a directory" in result.stderr
    assert not mark.exists()


def test_an_ingest_that_ends_well_skips_the_teardown_with_its_store_whole(
    tmp_path: Path,
) -> None:
    import duckdb

    mark, db = tmp_path / "mark", tmp_path / "k.duckdb"
    samples = Path(__file__).resolve().parent.parent / "samples" / "valid"
    args = ["ingest", "--no-progress", "--db", str(db), str(samples)]
    result = subprocess.run(
        [sys.executable, "-I", "-c", _MARK_EXIT_AT_ONCE, str(mark), *args],
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert mark.read_text() == "0" and result.stdout.decode().startswith("stored ")
    assert not Path(f"{db}.wal").exists()  # checkpointed and closed before the exit
    with duckdb.connect(str(db), read_only=True) as store:
        stored = store.execute("SELECT count(*) FROM matches").fetchone()
    assert stored is not None and f"holds {stored[0]} match(es)" in result.stdout.decode()


def test_an_ingest_that_fails_ends_through_the_usual_teardown(tmp_path: Path) -> None:
    mark, db = tmp_path / "mark", tmp_path / "k.duckdb"
    args = ["ingest", "--no-progress", "--db", str(db), str(tmp_path / "missing.krec")]
    result = subprocess.run(
        [sys.executable, "-I", "-c", _MARK_EXIT_AT_ONCE, str(mark), *args],
        capture_output=True,
        check=False,
    )
    assert result.returncode == 2 and b"missing.krec" in result.stderr
    assert not mark.exists()


def test_a_server_that_stops_cleanly_skips_the_teardown_with_its_store_whole(
    tmp_path: Path,
) -> None:
    import signal

    import duckdb

    mark, db = tmp_path / "mark", tmp_path / "served.duckdb"
    args = ["serve", "--port", "0", "--db", str(db), "--grace", "1"]
    process = subprocess.Popen(
        [sys.executable, "-I", "-c", _MARK_EXIT_AT_ONCE, str(mark), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert "serving on" in process.stdout.readline()
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert out.strip().endswith("kingrec: stopped") and mark.read_text() == "0"
    with duckdb.connect(str(db), read_only=True) as store:  # closed whole, opens again
        assert store.execute("SELECT count(*) FROM matches").fetchone() == (0,)


def test_the_teardown_is_skipped_as_the_command_said_always_outweighing_on_success(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kingrec_cli import teardown

    monkeypatch.setattr(teardown, "_when", None)
    assert not teardown.skip(ended_well=True)  # no command said anything: the usual way out
    teardown.needless(teardown.ON_SUCCESS)
    assert teardown.skip(ended_well=True) and not teardown.skip(ended_well=False)
    teardown.needless(teardown.ALWAYS)  # a channel opened, after or before: always
    teardown.needless(teardown.ON_SUCCESS)
    assert teardown.skip(ended_well=False) and teardown.skip(ended_well=True)


# Runs the console script and writes, as the command ends, whether the cycle collector is on
# and how many objects it was told to leave alone (gc.freeze).
_COLLECTOR = """
import gc, json, os, sys
out, sys.argv = sys.argv[1], ["kingrec", *sys.argv[2:]]
def exit_at_once(code, _exit=os._exit):
    open(out, "w").write(json.dumps([gc.isenabled(), gc.get_freeze_count()]))
    _exit(code)
os._exit = exit_at_once
from kingrec_cli.startup import run
run()
"""


def test_the_console_script_loads_the_command_with_the_collector_off_and_runs_it_on(
    tmp_path: Path,
) -> None:
    import tomllib

    project = tomllib.loads((SAMPLE.parents[2] / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["kingrec"] == "kingrec_cli.startup:run"
    out = tmp_path / "collector.json"
    result = subprocess.run(
        [sys.executable, "-I", "-c", _COLLECTOR, str(out), "validate", str(SAMPLE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "0 invalid" in result.stdout
    enabled, frozen = json.loads(out.read_text())
    # On for the run itself (a long command makes cycles); what was loaded, frozen.
    assert enabled and frozen > 10_000


# What ``kingrec validate`` of clean .krec records must not load: the reference twins and
# the reference validator. The compiled checker vouches for every such record; only one it
# cannot vouch for is judged by the reference, loaded then.
REFERENCE_JUDGES = ("kingrec._engine_py", "kingrec._frames_py", "kingrec.validator")


def _krec(path: Path, *payloads: bytes) -> Path:
    from kingrec.container import KrecWriter

    with KrecWriter.open(path) as writer:
        for payload in payloads:
            writer.write(payload)
    return path


def _simulated(seed: int) -> bytes:
    from kingrec.rules import PRESETS
    from kingrec.simulate import simulate_match

    return simulate_match(PRESETS["classic"], seed).SerializeToString()


@pytest.mark.skipif(COMPILED is None, reason="the compiled twins are not built")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_validating_clean_krec_records_loads_no_reference_twin(tmp_path: Path, jobs: str) -> None:
    path = _krec(tmp_path / "two.krec", _simulated(1), _simulated(2))
    loaded = loaded_by(tmp_path, "validate", "--jobs", jobs, str(path))
    assert {m for m in REFERENCE_JUDGES if m in loaded} == set()
    assert "kingrec._fastcheck_c" in loaded  # ...and the compiled checker judged them


@pytest.mark.skipif(COMPILED is None, reason="the compiled twins are not built")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_validating_a_record_seen_twice_loads_no_reference_twin_for_it(
    tmp_path: Path, jobs: str
) -> None:
    # A repeat (a DUPLICATE_RECORD warning) is judged again by the compiled checker, as a
    # clean record is: the reference validator took a millisecond a repeat.
    payload = _simulated(1)
    path = _krec(tmp_path / "twice.krec", payload, payload)
    loaded = loaded_by(tmp_path, "validate", "--jobs", jobs, str(path))
    assert {m for m in REFERENCE_JUDGES if m in loaded} == set()
    assert "kingrec._fastcheck_c" in loaded


def _simulated_under(rules_name: str, seed: int) -> bytes:
    from kingrec.rules import PRESETS
    from kingrec.simulate import simulate_match

    rules = PRESETS["classic"].replace(preset=rules_name)
    return simulate_match(rules, seed).SerializeToString()


def _commands_but(name: str) -> set[str]:
    from kingrec_cli.main import COMMANDS

    return {module for command, module in COMMANDS.items() if command != name}


@pytest.mark.skipif(COMPILED is None, reason="the compiled twins are not built")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_validating_clean_krec_records_loads_neither_protobuf_nor_another_command(
    tmp_path: Path, jobs: str
) -> None:
    # The compiled checker reads each record's ruleset from its bytes: no protobuf, whose
    # import was about a quarter of the command's start-up.
    path = _krec(tmp_path / "two.krec", _simulated(1), _simulated_under("house", 2))
    loaded = loaded_by(tmp_path, "validate", "--jobs", jobs, str(path))
    assert {m for m in loaded if m.startswith(("google.protobuf", "kingrec.v1"))} == set()
    assert loaded & _commands_but("validate") == set()
    assert "kingrec_cli.validate" in loaded  # ...and the command ran


@pytest.mark.skipif(COMPILED is None, reason="the compiled twins are not built")
def test_validating_a_record_whose_ruleset_is_not_plain_loads_protobuf_for_it(
    tmp_path: Path,
) -> None:
    # The other side of the test above: a preset's name that is not ASCII is left to
    # protobuf to read (and to check as UTF-8); the record is still clean.
    path = _krec(tmp_path / "çay.krec", _simulated_under("çay evi", 1))
    listing = tmp_path / "modules.json"
    result = subprocess.run(
        [sys.executable, "-I", "-c", _RUN, str(listing), "validate", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "1 valid, 0 invalid" in result.stdout
    loaded = set(json.loads(listing.read_text()))
    assert "kingrec.v1.record_pb2" in loaded
    assert "kingrec.validator" not in loaded  # the checker vouched for it all the same
