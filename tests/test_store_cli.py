"""``kingrec ingest``, ``query`` and ``stats`` as people and scripts use them: real processes,
real DuckDB files, pipes and a pseudo-terminal, processes killed midway."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from pty_screen import on_terminal

from kingrec.container import KrecWriter
from kingrec.findings import MatchReport
from kingrec.paths import NotRecords, record_paths
from kingrec.records import Damage
from kingrec.rules import preset
from kingrec.simulate import simulate_matches
from kingrec.store import Store
from kingrec.store.schema import SCHEMA_VERSION
from kingrec.store.stats import STATS, run_stat
from kingrec.validation import validate_file

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
KINGREC = str(Path(sys.executable).parent / "kingrec")
BAR_PIECES = ("━", "kB", "-:--:--")


def run(*args: str, cwd: Path | None = None, stdin: bytes | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    result = subprocess.run(
        [KINGREC, *args], cwd=cwd, input=stdin, capture_output=True, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )


def _count(db: Path, sql: str) -> Any:
    with Store.open(str(db), read_only=True) as store:
        return store.con.execute(sql).fetchall()[0][0]


def _judged_samples() -> dict[str, int]:
    """What validate makes of the samples folder: readable files, unique records by verdict,
    damage, unreadable files."""
    out = dict.fromkeys(("files", "valid", "invalid", "damaged", "unreadable", "records"), 0)
    for path in record_paths([str(SAMPLES)]):
        if isinstance(path, NotRecords):  # the manifest: told and skipped by both commands
            continue
        assert isinstance(path, str)
        try:
            items = list(validate_file(path))
        except Exception:
            out["unreadable"] += 1
            continue
        out["files"] += 1
        for item in items:
            if isinstance(item, Damage):
                out["damaged"] += 1
            elif isinstance(item, MatchReport):
                out["records"] += 1
                out["valid" if item.valid else "invalid"] += 1
    return out


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """400 short matches: an ingest of them in batches of 20 runs long enough to stop."""
    path = tmp_path_factory.mktemp("big") / "big.krec"
    with KrecWriter.open(path) as writer:
        for match in simulate_matches(preset("short"), 400, seed=3):
            writer.write_match(match)
    return path


# -- ingest -----------------------------------------------------------------------------------


def test_ingest_of_the_samples_stores_every_record_and_lists_the_damage(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    result = run("ingest", "--db", str(db), str(SAMPLES))
    judged = _judged_samples()
    assert result.returncode == 2  # damage and unreadable files
    assert "Traceback" not in result.stderr
    *errors, skipped = result.stderr.splitlines()
    assert len(errors) == judged["unreadable"] == 2
    assert all(line.startswith("kingrec: error: ") for line in errors)
    assert skipped == (
        f"kingrec: {SAMPLES / 'manifest.json'}: skipped: not match records (a JSON object "
        'with the keys "samples")'
    )
    assert any("bad-magic.krec is not a .krec file" in line for line in errors)
    assert any("newer-version.krec was written by a newer kingrec" in line for line in errors)
    *damage, summary = result.stdout.splitlines()
    assert len(damage) == judged["damaged"] == 3
    assert damage[1].startswith(
        "DAMAGED " + str(SAMPLES / "damaged" / "flipped-byte.krec") + ", frame 2, byte 4935: "
        "FRAME_CORRUPT"
    )
    stored = _count(db, "SELECT count(*) FROM matches")
    valid = _count(db, "SELECT count(*) FROM matches WHERE valid")
    duplicates = judged["records"] - stored
    assert summary == (
        f"stored {stored} record(s) ({valid} valid, {stored - valid} invalid), "
        f"{duplicates} duplicate(s), 3 damaged frame(s) or line(s), 2 unreadable file(s), "
        f"1 file(s) skipped (not records) from {judged['files']} file(s); {db} holds "
        f"{stored} match(es), "
        f"{_count(db, 'SELECT count(*) FROM deals')} deal(s)"
    )
    assert stored - valid == judged["invalid"] > 30  # invalid records stored, flagged
    assert _count(db, "SELECT count(*) FROM damage") == 3
    # the manifest beside the samples was once stored as an invalid match without an id
    assert _count(db, "SELECT count(*) FROM matches WHERE coalesce(match_id, '') = ''") == 0


def test_a_second_ingest_stores_nothing_twice_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    files = [str(SAMPLES / "valid"), str(SAMPLES / "invalid")]
    first = run("ingest", "--db", str(db), *files)
    tables = ("matches", "deals", "tricks", "plays", "findings")
    counts = {t: _count(db, f"SELECT count(*) FROM {t}") for t in tables}
    again = run("ingest", "--db", str(db), *files)
    assert first.returncode == again.returncode == 0  # invalid records are data, not failure
    assert {t: _count(db, f"SELECT count(*) FROM {t}") for t in tables} == counts
    total = counts["matches"] + int(first.stdout.split("), ")[1].split()[0])
    assert again.stdout.startswith(
        f"stored 0 record(s) (0 valid, 0 invalid), {total} duplicate(s) from "
    )


def test_ingest_json_is_one_object_with_counts_and_locations(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    result = run(
        "ingest", "--json", "--db", str(db), str(SAMPLES / "valid" / "classic.krec"),
        str(SAMPLES / "damaged"), "nowhere.krec",
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == ""
    (line,) = result.stdout.splitlines()
    report = json.loads(line)
    assert report["type"] == "summary" and report["db"] == str(db)
    stored = _count(db, "SELECT count(*) FROM matches")
    assert (report["stored"], report["stored_invalid"], report["rejected"]) == (stored, 0, 0)
    assert stored == 2 + 3  # classic.krec's, and those of the damaged files that can be read
    assert report["damaged"] == 3 and report["unreadable"] == 3
    assert report["deals"] == report["store"]["deals"] == _count(db, "SELECT count(*) FROM deals")
    truncated = [p for p in report["problems"] if p["code"] == "FRAME_TRUNCATED"]
    assert truncated == [
        {"type": "damage", "file": str(SAMPLES / "damaged" / "truncated.krec"), "frame": 2,
         "offset": 9839, "line": None, "code": "FRAME_TRUNCATED",
         "message": truncated[0]["message"]}
    ]  # fmt: skip
    assert {e["code"] for e in report["errors"]} == {
        "NOT_KREC", "UNSUPPORTED_VERSION", "UNREADABLE"
    }  # fmt: skip


def test_ingest_reads_standard_input_and_the_store_named_by_the_environment(
    tmp_path: Path,
) -> None:
    db = tmp_path / "env.duckdb"
    data = (SAMPLES / "valid" / "classic.jsonl").read_bytes()
    result = run("ingest", "-", stdin=data, env={"KINGREC_DB": str(db)}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("stored 1 record(s) (1 valid, 0 invalid), 0 duplicate(s)")
    assert _count(db, "SELECT source || ':' || source_line FROM matches") == "<stdin>:1"
    assert not (tmp_path / "kingrec.duckdb").exists()


def test_a_store_in_use_by_another_process_is_named_not_a_traceback(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    Store.open(str(db)).close()
    holder = duckdb.connect(str(db))  # this process holds the write lock
    try:
        for args in (["ingest", "--db", str(db), str(SAMPLES / "valid")],
                     ["query", "--db", str(db), "SELECT 1"]):  # fmt: skip
            result = run(*args)
            assert result.returncode == 2
            assert result.stderr.startswith(
                f"kingrec: error: {db}: the store is in use by another process (PID {os.getpid()}"
            )
            assert "Traceback" not in result.stderr
    finally:
        holder.close()


def test_a_store_from_a_newer_kingrec_or_no_store_at_all_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    Store.open(str(db)).close()
    con = duckdb.connect(str(db))
    con.execute("UPDATE kingrec_meta SET value = ? WHERE key = 'schema_version'",
                [str(SCHEMA_VERSION + 1)])  # fmt: skip
    con.close()
    for args in (["ingest", "--db", str(db), str(SAMPLES / "valid")],
                 ["query", "--db", str(db), "SELECT 1"], ["stats", "--db", str(db)]):  # fmt: skip
        result = run(*args)
        assert result.returncode == 2
        assert "written by a newer kingrec" in result.stderr and "upgrade kingrec" in result.stderr
    text = tmp_path / "notes.duckdb"
    text.write_text("not a database")
    result = run("ingest", "--db", str(text), str(SAMPLES / "valid"))
    assert (result.returncode, result.stderr) == (
        2, f"kingrec: error: {text}: not a DuckDB file, so not a kingrec store (give an "
        "existing store or a path where a new one can be made)\n"
    )  # fmt: skip
    result = run("query", "--db", str(tmp_path / "none.duckdb"), "SELECT 1")
    assert result.returncode == 2 and "no store there (run kingrec ingest first)" in result.stderr


def test_a_store_that_cannot_be_opened_is_said_first_and_alone_though_it_opens_beside_the_reading(
    tmp_path: Path,
) -> None:
    # The store is opened while the first batch is read: its failure is still the
    # command's, said before (and instead of) anything about the files, whatever they are.
    text = tmp_path / "notes.duckdb"
    text.write_text("not a database")
    for first in ([str(tmp_path / "missing.krec")], [str(SAMPLES / "manifest.json")],
                  [str(SAMPLES / "valid" / "classic.krec")], []):  # fmt: skip
        result = run("ingest", "--db", str(text), *first, str(SAMPLES / "valid"))
        assert (result.returncode, result.stdout, result.stderr) == (
            2, "", f"kingrec: error: {text}: not a DuckDB file, so not a kingrec store (give an "
            "existing store or a path where a new one can be made)\n"
        ), first  # fmt: skip
    assert text.read_text() == "not a database"


def test_a_db_that_is_a_record_file_is_refused_by_every_command_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    # DuckDB opened such a file as an empty database in memory: "stored 2 record(s)", exit
    # 0, and nothing kept.
    records = tmp_path / "classic.jsonl"
    assert run("convert", str(SAMPLES / "valid" / "classic.krec"), str(records)).returncode == 0
    before = records.read_bytes()
    out = tmp_path / "parquet"
    for args in (
        ["ingest", "--db", str(records), str(SAMPLES / "valid" / "classic.krec")],
        ["query", "--db", str(records), "SELECT 1"],
        ["stats", "--db", str(records)],
        ["export", "--db", str(records), "--parquet", str(out)],
        ["serve", "--db", str(records), "--port", "0"],
    ):
        result = run(*args)
        assert (result.returncode, result.stdout) == (2, ""), args
        assert result.stderr == (
            f"kingrec: error: {records}: not a DuckDB file, so not a kingrec store (give an "
            "existing store or a path where a new one can be made)\n"
        ), args
    assert records.read_bytes() == before and not out.exists()
    empty = tmp_path / "made-by-mktemp"
    empty.touch()
    result = run("ingest", "--db", str(empty), str(SAMPLES / "valid" / "classic.krec"))
    assert result.returncode == 2 and "not a DuckDB file" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["classic.jsonl", "made-by-mktemp"]
    assert empty.stat().st_size == 0


# -- interrupted ingests ---------------------------------------------------------------------------


def _held_ingest(db: Path, big: Path, batch: int) -> subprocess.Popen[bytes]:
    """A real ``kingrec ingest`` that says when it hands a batch to its writers, then waits
    there (its writes going on) for a line on its standard input: a test signals it at that
    point, however slowly the test itself runs."""
    return subprocess.Popen(
        [KINGREC, "ingest", "--batch", str(batch), "--db", str(db), str(big)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "KINGREC_DEBUG_BATCHES": "hold"},
    )  # fmt: skip


def _go_on(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):  # killed meanwhile
        proc.stdin.write(b"\n")
        proc.stdin.flush()


def _finish(proc: subprocess.Popen[bytes], said: list[str]) -> tuple[int, str]:
    assert proc.stdin is not None and proc.stderr is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()  # no more holds: the end of standard input
    said.append(proc.stderr.read().decode())
    proc.stderr.close()
    return proc.wait(60), "".join(said)


def _stop_midway(db: Path, big: Path, how: signal.Signals) -> tuple[int, str]:
    """A real ``kingrec ingest`` stopped with ``how`` while it holds after handing batch 3
    to its writers (batch 1 is committed then: two are written at a time): its exit status
    and what it wrote on standard error."""
    proc = _held_ingest(db, big, 20)
    assert proc.stderr is not None
    said, handed = [], 0
    for line in proc.stderr:
        said.append(line.decode())
        if "batch handed to the writers" in said[-1]:
            handed += 1
            if handed == 3:
                proc.send_signal(how)
                break
            _go_on(proc)
    return _finish(proc, said)


def _tables(db: Path) -> dict[str, int]:
    return {t: _count(db, f"SELECT count(*) FROM {t}")
            for t in ("matches", "players", "deals", "tricks", "plays", "records")}  # fmt: skip


def test_kill_9_midway_then_a_rerun_gives_the_counts_of_a_clean_ingest(
    tmp_path: Path, big: Path
) -> None:
    clean = tmp_path / "clean.duckdb"
    assert run("ingest", "--db", str(clean), str(big)).returncode == 0
    db = tmp_path / "k.duckdb"
    status, _ = _stop_midway(db, big, signal.SIGKILL)
    assert status == -signal.SIGKILL
    stored = _count(db, "SELECT count(*) FROM matches")
    assert 0 < stored < 400 and stored % 20 == 0  # whole batches only, and not all of them
    rerun = run("ingest", "--batch", "20", "--db", str(db), str(big))
    assert rerun.returncode == 0
    assert rerun.stdout.startswith(
        f"stored {400 - stored} record(s) ({400 - stored} valid, 0 invalid), {stored} duplicate(s)"
    )
    assert _tables(db) == _tables(clean)
    assert _count(db, "SELECT count(DISTINCT content_hash) FROM matches") == 400


@pytest.mark.parametrize(
    ("how", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "Ctrl-C"]
)
def test_a_stop_midway_keeps_whole_batches_and_says_how_to_finish(
    tmp_path: Path, big: Path, how: signal.Signals, code: int
) -> None:
    db = tmp_path / "k.duckdb"
    status, err = _stop_midway(db, big, how)
    assert status == code, err
    assert "Traceback" not in err
    stored = _count(db, "SELECT count(*) FROM matches")
    assert stored % 20 == 0 and stored < 400
    assert f"({stored} record(s) of this run are in {db}); run the same command again" in err
    assert run("ingest", "--db", str(db), str(big)).returncode == 0
    assert _count(db, "SELECT count(*) FROM matches") == 400


def _interrupt_twice(db: Path, big: Path, batches: int) -> tuple[int, str]:
    """A real ``kingrec ingest`` given Ctrl-C while it holds after handing its
    ``batches``-th batch to the writers, then Ctrl-C again while it holds, stopping, with
    the next batch being written: its status and standard error."""
    proc = _held_ingest(db, big, 50)
    assert proc.stderr is not None
    said, handed = [], 0
    for line in proc.stderr:
        said.append(line.decode())
        if "stopping, the writes finishing" in said[-1]:
            proc.send_signal(signal.SIGINT)
            break
        if "batch handed to the writers" in said[-1]:
            handed += 1
            if handed == batches:
                proc.send_signal(signal.SIGINT)
            _go_on(proc)
    return _finish(proc, said)


def test_a_second_ctrl_c_while_the_writes_finish_exits_130_and_leaves_whole_batches(
    tmp_path: Path, big: Path
) -> None:
    """Once ``ResourceInUseException … connection is busy``, ``RuntimeError: Query
    interrupted`` (exit 3) or a C++ abort (134), 6 times in 34."""
    clean = tmp_path / "clean.duckdb"
    assert run("ingest", "--db", str(clean), str(big)).returncode == 0
    for attempt in range(6):
        db = tmp_path / f"k{attempt}.duckdb"
        status, err = _interrupt_twice(db, big, 1 + attempt)
        assert "stopping, the writes finishing" in err, (attempt, err)
        assert status == 130, (attempt, err)
        assert "Traceback" not in err and "error" not in err, (attempt, err)
        assert err.endswith(
            "kingrec: stopped at once: the store keeps the batches committed so far; run the "
            "same command again to finish\n"
        ), err
        stored = _count(db, "SELECT count(*) FROM matches")
        assert stored % 50 == 0 and stored < 400, attempt  # whole batches only
        assert _count(db, "SELECT count(*) FROM players") == 4 * stored
        assert _count(db, "SELECT coalesce(sum(deals), 0) FROM matches") == _count(
            db, "SELECT count(*) FROM deals"
        )
        assert run("ingest", "--batch", "50", "--db", str(db), str(big)).returncode == 0
        assert _tables(db) == _tables(clean), attempt


# -- query ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("store") / "k.duckdb"
    result = run("ingest", "--db", str(db), str(SAMPLES / "valid"), str(SAMPLES / "invalid"))
    assert result.returncode == 0, result.stderr
    return db


SQL = "SELECT contract, count(*) AS deals, max(tricks) AS most FROM deals GROUP BY ALL ORDER BY 1"


def _expected(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with Store.open(str(db), read_only=True) as s:
        return s.con.execute(sql).fetchall()


def test_query_writes_csv_through_a_pipe_by_default(store: Path) -> None:
    result = run("query", "--db", str(store), SQL)
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["contract", "deals", "most"]
    expected = [["" if v is None else str(v) for v in row] for row in _expected(store, SQL)]
    assert rows[1:] == expected
    assert run("query", "--db", str(store), "-f", "csv", SQL).stdout == result.stdout


def test_query_json_is_one_object_per_row(store: Path) -> None:
    sql = "SELECT match_id, valid, winners, content_hash FROM matches ORDER BY match_key LIMIT 3"
    result = run("query", "--db", str(store), "--format", "json", sql)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    expected = _expected(store, sql.replace("LIMIT 3", "LIMIT 3"))
    assert [(r["match_id"], r["valid"], r["winners"]) for r in rows] == [
        tuple(row[:3]) for row in expected
    ]
    assert [bytes.fromhex(r["content_hash"]) for r in rows] == [row[3] for row in expected]


def test_query_as_a_table_aligns_columns_and_marks_null(store: Path) -> None:
    sql = "SELECT contract, count(*) AS deals FROM deals GROUP BY ALL ORDER BY 1 NULLS LAST"
    result = run("query", "--db", str(store), "-f", "table", sql)
    header, rule, *rows = result.stdout.splitlines()
    assert header.split() == ["contract", "deals"]
    assert set(rule) == {"─"}
    expected = _expected(store, sql)
    assert [r.split() for r in rows] == [
        ["NULL" if c is None else str(c), str(n)] for c, n in expected
    ]
    assert len({len(r) for r in rows}) == 1  # numbers right-aligned in one column


def test_query_is_a_table_on_a_terminal_by_default(store: Path) -> None:
    shown = on_terminal([KINGREC, "query", "--db", str(store), SQL])
    assert shown.returncode == 0
    piped = run("query", "--db", str(store), "-f", "table", SQL)
    assert shown.lines == piped.stdout.splitlines()


def test_query_cuts_at_max_rows_and_says_so(store: Path) -> None:
    result = run("query", "--db", str(store), "--max-rows", "5", "SELECT * FROM plays")
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 1 + 5
    assert result.stderr == "kingrec: showing the first 5 row(s); --max-rows for more\n"


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "not allowed"),
        ("COPY plays TO 'out.csv'", "only queries are allowed (SELECT, WITH … SELECT), not COPY"),
        ("DROP TABLE plays_base", "not DROP"),
        ("ATTACH 'other.duckdb'", "not ATTACH"),
        ("SELECT 1; DELETE FROM matches", "one SQL statement at a time"),
        ("SELEC 1", "the SQL does not parse"),
    ],
)
def test_a_hostile_query_gets_one_clear_line_and_changes_nothing(
    store: Path, sql: str, says: str
) -> None:
    before = _count(store, "SELECT count(*) FROM plays")
    result = run("query", "--db", str(store), sql)
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("kingrec: error: ") and says in line
    assert _count(store, "SELECT count(*) FROM plays") == before
    assert not (store.parent / "out.csv").exists()


def test_a_query_past_its_timeout_is_stopped(store: Path) -> None:
    began = time.monotonic()
    result = run("query", "--db", str(store), "--timeout", "0.5",
                 "SELECT count(*) FROM range(10000000000) a, range(10000000000) b")  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == "kingrec: error: the query ran past its time limit of 0.5 s\n"
    assert time.monotonic() - began < 30


# -- stats ---------------------------------------------------------------------------------------


# The par questions need an analysed store: tests/test_store_par.py holds them to the library.
@pytest.mark.parametrize("name", [s.name for s in STATS.values() if not s.analysis])
def test_stats_prints_what_the_library_answers(store: Path, name: str) -> None:
    with Store.open(str(store), read_only=True) as s:
        result = run_stat(s, name)
        columns = [n for n, _ in result.columns]
        rows = pa.Table.from_batches(list(result.batches())).to_pylist()
    out = run("stats", "--db", str(store), "-f", "json", name)
    assert out.returncode == 0, out.stderr
    assert [json.loads(line) for line in out.stdout.splitlines()] == [
        {"stat": name, **row} for row in rows
    ]
    table = run("stats", "--db", str(store), "-f", "table", name).stdout.splitlines()
    assert table[0] == f"{STATS[name].title} ({name})"
    assert table[1].split() == columns
    assert len(table) == 3 + len(rows)
    sql = run("stats", "--sql", name).stdout
    assert sql == f"-- {name}: {STATS[name].title}\n{STATS[name].sql}"


def test_stats_draws_bars_on_a_terminal(store: Path) -> None:
    shown = on_terminal([KINGREC, "stats", "--db", str(store), "declarer"])
    assert shown.returncode == 0
    assert shown.lines[0] == "Declarer advantage per contract (declarer)"
    rows = shown.lines[3:]
    bars = [line.split()[-1] for line in rows]
    advantage = [float(line.split()[-2]) for line in rows]
    longest = max(range(len(rows)), key=lambda i: abs(advantage[i]))
    assert set(bars[longest]) == {"█"} and len(bars[longest]) == 24  # the longest bar is full
    assert all(set(b) <= set(" ▏▎▍▌▋▊▉█") for b in bars)
    assert (
        shown.lines
        == run("stats", "--db", str(store), "-f", "table", "declarer").stdout.split("\n")[:-1]
    )


def test_stats_without_a_name_answers_everything_and_lists_the_names(store: Path) -> None:
    result = run("stats", "--db", str(store), "-f", "table")
    assert result.returncode == 0
    titles = [f"{s.title} ({s.name})" for s in STATS.values()]
    assert [line for line in result.stdout.splitlines() if line in titles] == titles
    listing = run("stats", "--list").stdout.splitlines()
    assert listing[0::2] == [f"{s.name}  {s.title}" for s in STATS.values()]
    wrong = run("stats", "--db", str(store), "nope")
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("kingrec: error: no stats named 'nope'; there are: contracts")


def test_the_bar_and_the_summary_on_a_terminal(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    args = ["ingest", "--db", str(db), str(SAMPLES / "valid")]
    shown = on_terminal([KINGREC, *args])
    assert shown.returncode == 0
    assert "kB" in shown.raw  # the bar was drawn, and is gone
    (line,) = shown.lines
    valid = _count(db, "SELECT count(*) FROM matches WHERE valid")
    assert line.startswith(f"stored {valid} record(s) ({valid} valid, 0 invalid), 0 duplicate(s) ")
    assert not any(piece in line for piece in BAR_PIECES)
