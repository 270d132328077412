"""The ``kingrec`` command line, used the way people use it: real files, real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kingrec_cli.main import main

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CLASSIC = SAMPLES / "valid" / "classic.krec"
RUFF = SAMPLES / "invalid" / "must-ruff.krec"
ALL_RECORD_SAMPLES = sorted(
    p for p in SAMPLES.rglob("*") if p.suffix in (".krec", ".jsonl") and "damaged" not in p.parts
)


def run(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """The installed console script, as a user runs it."""
    kingrec = Path(sys.executable).parent / "kingrec"
    return subprocess.run([str(kingrec), *args], input=input, capture_output=True, check=False)


def _commands(group: click.Group) -> list[str]:
    return sorted(group.list_commands(click.Context(group)))


@pytest.mark.parametrize("command", [[], *[[c] for c in _commands(main)]], ids=str)
def test_every_command_has_help(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output
    target = main if not command else main.get_command(click.Context(main), command[0])
    assert target is not None
    assert target.help and len(target.help) > 40


def test_validate_valid_file_exits_0_with_a_summary() -> None:
    result = run("validate", str(CLASSIC))
    assert result.returncode == 0, result.stderr
    assert b"2 valid, 0 invalid" in result.stdout
    assert result.stderr == b""


def test_validate_invalid_file_exits_1_and_names_the_problem() -> None:
    result = run("validate", str(SAMPLES / "invalid" / "must-follow-suit.krec"))
    assert result.returncode == 1
    out = result.stdout.decode()
    assert "INVALID" in out and "MUST_FOLLOW_SUIT" in out and "frame 1, byte 12" in out
    assert "had to follow suit" in out


@pytest.mark.parametrize("name", ["truncated.krec", "flipped-byte.krec", "bad-magic.krec",
                                  "newer-version.krec", "bad-line.jsonl"])  # fmt: skip
def test_damaged_file_exits_2_with_a_message_not_a_traceback(name: str) -> None:
    result = run("validate", str(SAMPLES / "damaged" / name))
    assert result.returncode == 2
    both = (result.stdout + result.stderr).decode()
    assert "Traceback" not in both
    assert name in both


def test_missing_file_and_directory_exit_2(tmp_path: Path) -> None:
    for path in (tmp_path / "nope.krec", tmp_path):
        result = run("validate", str(path))
        assert result.returncode == 2
        assert b"Traceback" not in result.stderr


def test_bad_usage_exits_2() -> None:
    assert run("validate").returncode == 2
    assert run("frobnicate").returncode == 2


def test_validate_reads_standard_input() -> None:
    result = run("validate", "-", input=CLASSIC.read_bytes())
    assert result.returncode == 0
    assert b"2 valid" in result.stdout
    result = run(
        "validate", "--json", "-", input=(SAMPLES / "valid" / "classic.jsonl").read_bytes()
    )
    assert json.loads(result.stdout.splitlines()[-1])["matches"] == 1


def test_validate_json_report_has_locations_and_legal_cards() -> None:
    result = run("validate", "--json", str(SAMPLES / "invalid" / "must-ruff.krec"), str(CLASSIC))
    assert result.returncode == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    (match,) = [line for line in lines if line["type"] == "match"]
    assert match["valid"] is False and match["frame"] == 0 and match["offset"] == 12
    (finding,) = match["findings"]
    assert finding["code"] == "MUST_RUFF" and finding["severity"] == "error"
    assert {"deal", "trick", "seat", "card", "legal", "message"} <= set(finding)
    assert lines[-1] == {"type": "summary", "files": 2, "matches": 3, "deals": 60, "invalid": 1,
                         "warnings": 0, "damaged": 0, "unreadable": 0, "skipped": 0}  # fmt: skip


def test_validate_reports_frames_after_damage() -> None:
    result = run("validate", "--json", "--all", str(SAMPLES / "damaged" / "flipped-byte.krec"))
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["type"] for line in lines] == ["match", "damage", "match", "summary"]
    assert lines[1]["frame"] == 1 and lines[2]["frame"] == 2


def test_warnings_alone_keep_exit_0() -> None:
    result = run("validate", str(SAMPLES / "invalid" / "over-time.krec"))
    assert result.returncode == 0
    assert b"OVER_TIME" in result.stdout and b"1 warning" in result.stdout


def test_progress_bar_can_be_forced_on_without_breaking_output() -> None:
    result = run("validate", "--progress", str(CLASSIC))
    assert result.returncode == 0
    assert b"2 valid" in result.stdout


def test_show_lays_out_tricks_winners_and_scores() -> None:
    result = run("show", str(CLASSIC), "--deal", "2", "--hands")
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert "Deal 2" in out and "Deal 3" not in out
    assert "declarer" in out and "running" in out
    assert any(symbol in out for symbol in "♣♦♥♠")


def test_show_picks_a_match_by_id_and_reports_a_missing_one() -> None:
    assert b"Match classic-1" in run("show", str(CLASSIC), "--match", "classic-1").stdout
    missing = run("show", str(CLASSIC), "--match", "nope")
    assert missing.returncode == 2
    assert b"no match 'nope'" in missing.stderr


def test_show_an_abandoned_and_a_revoked_match() -> None:
    out = run("show", str(SAMPLES / "valid" / "abandoned.krec")).stdout.decode()
    assert "abandoned" in out
    out = run("show", str(SAMPLES / "valid" / "revoke-penalized.krec")).stdout.decode()
    assert "revoke" in out


@pytest.mark.parametrize("sample", ALL_RECORD_SAMPLES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_convert_round_trips_every_sample_without_loss(sample: Path, tmp_path: Path) -> None:
    middle = tmp_path / ("middle.jsonl" if sample.suffix == ".krec" else "middle.krec")
    back = tmp_path / f"back{sample.suffix}"
    assert run("convert", str(sample), str(middle)).returncode == 0
    assert run("convert", str(middle), str(back)).returncode == 0
    assert back.read_bytes() == sample.read_bytes()


def test_convert_keeps_unknown_fields_from_newer_writers(tmp_path: Path) -> None:
    from kingrec.container import KrecWriter
    from kingrec.v1 import record_pb2 as pb

    match = pb.Match(match_id="future", format_version=1)
    match.MergeFromString(b"\xf8\x06\x2a")  # field 111, varint 42: unknown to this schema
    src = tmp_path / "future.krec"
    with KrecWriter.open(src) as writer:
        writer.write_match(match)
    assert run("convert", str(src), str(tmp_path / "f.jsonl")).returncode == 0
    assert run("convert", str(tmp_path / "f.jsonl"), str(tmp_path / "g.krec")).returncode == 0
    assert (tmp_path / "g.krec").read_bytes() == src.read_bytes()


def test_convert_refuses_a_damaged_file_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    result = run("convert", str(SAMPLES / "damaged" / "flipped-byte.krec"), str(target))
    assert result.returncode == 2
    assert b"--skip-damaged" in result.stderr
    assert os.listdir(tmp_path) == []
    result = run("convert", "--skip-damaged", str(SAMPLES / "damaged" / "flipped-byte.krec"),
                 str(target))  # fmt: skip
    assert result.returncode == 2
    assert len(target.read_text().splitlines()) == 2


def test_convert_to_standard_output() -> None:
    result = run("convert", str(CLASSIC), "-")
    assert result.returncode == 0
    assert [json.loads(line)["match_id"] for line in result.stdout.splitlines()] == [
        "classic-0", "classic-1"]  # fmt: skip


def test_python_dash_m_kingrec_works() -> None:
    result = subprocess.run([sys.executable, "-m", "kingrec", "--version"], capture_output=True,
                            check=False)  # fmt: skip
    assert result.returncode == 0
    assert b"kingrec" in result.stdout


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    kingrec = Path(sys.executable).parent / "kingrec"
    big = " ".join([str(CLASSIC)] * 200)
    result = subprocess.run(
        f"{kingrec} validate --json --all {big} | head -c 10", shell=True, capture_output=True,
        check=False,
    )  # fmt: skip
    assert len(result.stdout) == 10
    assert result.stderr == b""


def test_a_bug_is_one_line_and_exit_3_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import kingrec_cli.validate
    from kingrec_cli.main import run

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the engine fell over")

    monkeypatch.setattr(kingrec_cli.validate, "validate_records", broken)
    monkeypatch.setattr(sys, "argv", ["kingrec", "validate", str(CLASSIC)])
    monkeypatch.delenv("KINGREC_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_:
        run()
    assert exit_.value.code == 3
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: the engine fell over" in err
    assert "Traceback" not in err


# -- a closed pipe -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["validate", str(CLASSIC)], ["validate", "--json", str(RUFF)],
     ["show", str(CLASSIC)], ["convert", str(CLASSIC), "-"], ["simulate", "-o", "-"],
     ["simulate", "--matches", "20", "--jobs", "2", "-o", "-"]],
    ids=["validate", "validate-json", "show", "convert", "simulate", "simulate-jobs"],
)  # fmt: skip
def test_a_reader_that_goes_away_gives_141_not_1(args: list[str]) -> None:
    kingrec = Path(sys.executable).parent / "kingrec"
    proc = subprocess.Popen([str(kingrec), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 141  # 128 + SIGPIPE: "the reader went away", not "invalid"
    assert err == b""


def test_pipefail_sees_141_after_the_reader_read_a_little() -> None:
    kingrec = Path(sys.executable).parent / "kingrec"
    big = " ".join([str(CLASSIC)] * 300)
    result = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {kingrec} validate --json --all {big} | head -1"],
        capture_output=True, check=False,
    )  # fmt: skip
    assert result.returncode == 141
    assert json.loads(result.stdout)["type"] == "match"
    assert result.stderr == b""


# -- usage, help, completion ---------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["frobnicate"], ["validate"], ["validate", "--nope", "x"], ["show", "--deal", "0", "x"],
     ["convert", "a"], ["simulate", "--preset", "nope", "-o", "x.krec"],
     ["show", str(CLASSIC), "--match", "classic-1", "--index", "1"],
     ["validate", "--quiet", "--all", str(CLASSIC)]],
    ids=str,
)  # fmt: skip
def test_usage_errors_are_one_style_and_exit_2(args: list[str]) -> None:
    result = run(*args)
    assert result.returncode == 2
    first, *rest = result.stderr.decode().splitlines()
    assert first.startswith("kingrec: error: ")
    assert rest[0].startswith("Usage: kingrec")
    assert "Error:" not in result.stderr.decode()


@pytest.mark.parametrize("command", [[], *[[c] for c in _commands(main)]], ids=str)
def test_help_gives_examples_and_every_exit_status(command: list[str]) -> None:
    out = run(*command, "--help").stdout.decode()
    assert "Examples:\n" in out and "  kingrec " in out
    statuses = out[out.index("Exit status:") :]
    for status in ("0", "2", "3", "141"):
        assert f"  {status}  " in statuses
    assert "KINGREC_DEBUG=1" in statuses
    if command in ([], ["validate"]):
        assert "  1  some record invalid" in statuses
    if not command:
        assert "_KINGREC_COMPLETE=bash_source kingrec" in out


def test_the_shell_completion_script_is_produced() -> None:
    kingrec = Path(sys.executable).parent / "kingrec"
    env = {**os.environ, "_KINGREC_COMPLETE": "bash_source"}
    result = subprocess.run([str(kingrec)], env=env, capture_output=True, check=False)
    assert result.returncode == 0
    assert b"_kingrec_completion()" in result.stdout and b"complete " in result.stdout
    env = {**os.environ, "_KINGREC_COMPLETE": "bash_complete", "COMP_WORDS": "kingrec va",
           "COMP_CWORD": "1"}  # fmt: skip
    result = subprocess.run([str(kingrec)], env=env, capture_output=True, check=False)
    assert b"validate" in result.stdout


# -- validate: many inputs, quiet, JSON lines ------------------------------------------------


def test_validate_walks_directories_and_goes_on_past_what_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a.krec").write_bytes(CLASSIC.read_bytes())
    (tmp_path / "b" / "c.jsonl").write_bytes((SAMPLES / "valid" / "classic.jsonl").read_bytes())
    (tmp_path / "b" / "notes.txt").write_text("not a record")
    (tmp_path / "empty").mkdir()
    result = run("validate", "--json", "--all", str(tmp_path), str(tmp_path / "missing.krec"),
                 str(CLASSIC))  # fmt: skip
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    files = [line["file"] for line in lines if line["type"] in ("match", "error")]
    assert files == [str(tmp_path / "a.krec")] * 2 + [str(tmp_path / "b" / "c.jsonl"),
                     str(tmp_path / "missing.krec")] + [str(CLASSIC)] * 2  # fmt: skip
    assert lines[-1]["files"] == 3 and lines[-1]["matches"] == 5
    assert lines[-1]["unreadable"] == 1
    assert result.returncode == 2
    text = run("validate", str(tmp_path / "empty"), str(CLASSIC))
    assert text.returncode == 2
    assert b"kingrec: error: " in text.stderr and b"no record files" in text.stderr
    assert b"2 valid, 0 invalid" in text.stdout


def test_validate_the_samples_folder_in_one_go() -> None:
    result = run("validate", "-q", str(SAMPLES))
    assert result.returncode == 2  # the damaged samples
    out = result.stdout.decode()
    assert "checked 60 match(es)" in out and "in 52 file(s)" in out
    assert "OVER_TIME" not in out  # a warning: counted, not listed, under --quiet
    assert "MUST_RUFF" in out and "DAMAGED" in out
    # the manifest beside the samples is no record: told, skipped, counted, not judged
    assert "(no id)" not in out and out.rstrip().endswith(", 1 file(s) skipped (not records)")
    manifest = SAMPLES / "manifest.json"
    assert f"kingrec: {manifest}: skipped: not match records".encode() in result.stderr
    lines = [
        json.loads(line) for line in run("validate", "--json", str(SAMPLES)).stdout.splitlines()
    ]
    assert [line for line in lines if line["type"] == "skipped"] == [
        {"type": "skipped", "file": str(manifest), "message": f"{manifest}: skipped: not match "
         'records (a JSON object with the keys "samples")'}
    ]  # fmt: skip
    assert lines[-1]["skipped"] == 1 and lines[-1]["files"] == 52


def test_validate_warns_of_a_record_repeated_in_a_later_file(tmp_path: Path) -> None:
    """One run shares one memory of the records it judged: the copy is the warning."""
    copy = tmp_path / "copy.krec"
    copy.write_bytes(CLASSIC.read_bytes())
    result = run("validate", "--json", "--all", str(CLASSIC), str(copy))
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    matches = [line for line in lines if line["type"] == "match"]
    repeated = {name: [any(f["code"] == "DUPLICATE_RECORD" for f in m["findings"])
                       for m in matches if m["file"] == name]
                for name in (str(CLASSIC), str(copy))}  # fmt: skip
    assert repeated == {str(CLASSIC): [False, False], str(copy): [True, True]}
    assert all(m["valid"] for m in matches) and result.returncode == 0
    assert lines[-1]["warnings"] == 2
    text = run("validate", str(copy), str(CLASSIC)).stdout.decode()
    assert text.count("DUPLICATE_RECORD") == 2 and "2 warning(s)" in text


def test_quiet_lists_only_what_is_wrong(tmp_path: Path) -> None:
    over_time = str(SAMPLES / "invalid" / "over-time.krec")
    result = run("validate", "--quiet", over_time, str(CLASSIC))
    assert result.returncode == 0
    summary = "checked 3 match(es), 60 deal(s) in 2 file(s), 3 valid, 0 invalid, 1 warning(s)"
    assert result.stdout.decode().splitlines() == [summary]
    for args in (["convert", "-q", str(CLASSIC), str(tmp_path / "c.jsonl")],
                 ["simulate", "-q", "-o", str(tmp_path / "s.krec")]):  # fmt: skip
        result = run(*args)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_json_lines_hold_no_raw_line_separators(tmp_path: Path) -> None:
    from kingrec.container import KrecWriter
    from kingrec.v1 import record_pb2 as pb

    match = pb.Match(match_id="a\u2028b\u2029c\x85d")
    match.players.add(name="Ay\u2028şe", seat=0)
    path = tmp_path / "odd.krec"
    with KrecWriter.open(path) as writer:
        writer.write_match(match)
    result = run("validate", "--json", str(path))
    text = result.stdout.decode("utf-8")
    for raw in ("\u2028", "\u2029", "\x85"):
        assert raw not in text
    lines = text.splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["match", "summary"]
    assert json.loads(lines[0])["match_id"] == "a\u2028b\u2029c\x85d"


# Reads JSON Lines on standard input the two ways a JavaScript program does: split at what
# JavaScript counts as a line end (\n, \r, U+2028, U+2029: a regular expression's ``$``) and
# with Node's readline; prints what each line held.
_JS_READER = r"""
const readline = require("node:readline");
let text = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { text += chunk; });
process.stdin.on("end", () => {
  const split = text.match(/^.*$/gm).filter((line) => line.length > 0).map((l) => JSON.parse(l));
  const byReadline = [];
  const rl = readline.createInterface({ input: require("node:stream").Readable.from([text]) });
  rl.on("line", (line) => { if (line) byReadline.push(JSON.parse(line)); });
  rl.on("close", () => {
    const seen = (objs) => objs.map((o) => [o.type, o.match_id ?? null, o.file ?? null]);
    process.stdout.write(JSON.stringify([seen(split), seen(byReadline)]));
  });
});
"""


def test_a_javascript_reader_reads_one_report_per_json_line(tmp_path: Path) -> None:
    import shutil

    from kingrec.container import FrameDamage, KrecWriter, read_frames
    from kingrec.v1 import record_pb2 as pb

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    sample = SAMPLES / "invalid" / "must-ruff.krec"
    first = next(iter(read_frames(sample)))
    assert not isinstance(first, FrameDamage)
    match = pb.Match.FromString(first.payload)
    match.match_id = "a\u2028b\u2029c\x85d"
    match.players[2].name = "Ay\u2029şe\x85"
    folder = tmp_path / "line\u2028separated"
    folder.mkdir()
    path = folder / "p\u2029q\x85.krec"
    with KrecWriter.open(path) as writer:
        writer.write_match(match)
        writer.write_match(pb.Match(match_id="\u2028"))
    result = run("validate", "--json", str(path))
    assert result.returncode == 1, result.stderr
    text = result.stdout.decode("utf-8")
    lines = text.splitlines()
    assert len(lines) == 3 and text.count("\n") == 3
    read = subprocess.run(
        [node, "-e", _JS_READER], input=result.stdout, capture_output=True, timeout=60, check=True
    )
    expected = [
        ["match", "a\u2028b\u2029c\x85d", str(path)],
        ["match", "\u2028", str(path)],
        ["summary", None, None],
    ]
    assert json.loads(read.stdout) == [expected, expected]
    assert [json.loads(line)["type"] for line in lines] == ["match", "match", "summary"]


def test_writing_into_a_missing_directory_names_the_target_and_the_missing_directory(
    tmp_path: Path,
) -> None:
    """Once ``.x.jsonl.kingrec-PID.tmp: No such file or directory``: a name the user never gave."""
    missing = tmp_path / "no-such-dir"
    for args, said in (
        (["convert", str(CLASSIC), str(missing / "x.jsonl")], f"{missing / 'x.jsonl'}:"),
        (["simulate", "--matches", "1", "-o", str(missing / "s.krec")],
         f"cannot write {missing / 's.krec'}:"),
    ):  # fmt: skip
        result = run(*args)
        assert (result.returncode, result.stdout) == (2, b""), result.stderr
        assert result.stderr.decode() == (
            f"kingrec: error: {said} the directory {missing} does not exist\n"
        )
    afile = tmp_path / "a-file"
    afile.write_text("")
    result = run("convert", str(CLASSIC), str(afile / "x.jsonl"))
    assert result.returncode == 2 and result.stderr.decode() == (
        f"kingrec: error: {afile / 'x.jsonl'}: {afile} is not a directory\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
