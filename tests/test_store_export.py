"""Exporting a store as hive-partitioned Parquet, read back by pyarrow and by Spark.

The Spark tests run pyspark in local mode (``local[2]``) on the machine's Java; pyspark is in
the dev extra, so they run wherever the suite does (CI included). One SparkSession serves the
module.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

from kingrec.errors import StoreError
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.store import Store
from kingrec.store.export import PER_MATCH, WHOLE, export_parquet, exported_columns
from kingrec.store.par import analyse_store

ROOT = Path(__file__).resolve().parent.parent

# The questions, as the same SQL text for DuckDB (over the store) and Spark (over the export).
QUESTIONS = {
    "rifki_early_end_by_trick": (
        "SELECT end_trick, count(*) AS deals FROM deals "
        "WHERE contract = 'RIFKI' AND ended = 'EARLY' GROUP BY end_trick"
    ),
    "points_per_contract": (
        "SELECT contract, sum(points) AS points, count(*) AS tricks FROM tricks GROUP BY contract"
    ),
    "plays_per_card": "SELECT card, count(*) AS n FROM plays GROUP BY card",
    "most_led_card_per_contract": (
        "SELECT contract, card, count(*) AS n FROM plays WHERE position = 0 GROUP BY contract, card"
    ),
    "declarer_points_by_preset": (
        "SELECT m.preset, d.contract, sum(CASE d.declarer WHEN 0 THEN d.score_0 "
        "WHEN 1 THEN d.score_1 WHEN 2 THEN d.score_2 ELSE d.score_3 END) AS points "
        "FROM deals d JOIN matches m ON m.match_key = d.match_key GROUP BY m.preset, d.contract"
    ),
}
PRESETS = {"classic": 5, "rotation": 5}
HIVE = pads.partitioning(
    pa.schema([("preset", pa.string()), ("month", pa.string())]), flavor="hive"
)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store of simulated matches of two presets, started in many months."""
    db = str(tmp_path_factory.mktemp("store") / "k.duckdb")
    with Store.open(db) as store:
        for name, count in PRESETS.items():
            # a match's start time follows its seed: seeds ~35 days apart start in many months
            matches = [simulate_match(preset(name), s * 3_000_000 + 1) for s in range(count)]
            store.ingest_matches(matches, source=f"sim-{name}")
        store.ingest_payloads([b"\xff\xff not a match"], source="junk")  # a row of damage
    return db


@pytest.fixture(scope="module")
def exported(store_path: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "parquet"
    export_parquet(store_path, out)
    return out


def _normal(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows comparable across engines: enums as text, decimals as ints, in one order."""

    def value(v: Any) -> Any:
        if isinstance(v, Decimal):
            return int(v)
        return v

    return sorted((tuple(value(v) for v in row) for row in rows), key=repr)


def _duckdb_answers(db: str) -> dict[str, list[tuple[Any, ...]]]:
    with Store.open(db, read_only=True) as store:
        return {name: _normal(store.con.execute(sql).fetchall()) for name, sql in QUESTIONS.items()}


# -- pyarrow ---------------------------------------------------------------------------------


def test_every_table_reads_back_with_its_rows_and_documented_partitions(
    store_path: str, exported: Path
) -> None:
    manifest = json.loads((exported / "kingrec_export.json").read_text(encoding="utf-8"))
    with Store.open(store_path, read_only=True) as store:
        counts = {t: store.count("plays_base" if t == "plays" else t) for t in PER_MATCH + WHOLE}
        months = {
            (p, m)
            for p, m in store.con.execute(
                "SELECT preset, strftime(start_time, '%Y-%m') FROM matches"
            ).fetchall()
        }
    assert len(months) > 5 and {p for p, _ in months} == set(PRESETS)
    assert manifest["rows"] == counts
    assert counts["plays"] > 5000 and counts["damage"] == 1
    for table in PER_MATCH:
        data = pads.dataset(exported / table, format="parquet", partitioning=HIVE)
        assert data.count_rows() == counts[table], table
        assert data.schema.names == exported_columns(table), table
        dirs = {
            tuple(part.split("=", 1)[1] for part in path.parent.relative_to(exported / table).parts)
            for path in (exported / table).rglob("*.parquet")
        }
        # simulated records are clean and this store is not analysed: an empty table has one
        # empty file in a NULL partition
        empty = table in ("findings", "deal_par", "play_costs")
        expected = months if not empty else {("__HIVE_DEFAULT_PARTITION__",) * 2}
        assert dirs == expected, table
    for table in WHOLE:
        data = pads.dataset(exported / table, format="parquet")
        assert data.count_rows() == counts[table], table
    plays = pads.dataset(exported / "plays", partitioning=HIVE).to_table(
        filter=pads.field("preset") == "rotation"
    )
    assert 0 < plays.num_rows < counts["plays"]
    assert set(plays.column("position").to_pylist()) == {0, 1, 2, 3}


PAR_TABLES = ("deal_par", "play_costs")


@pytest.fixture(scope="module")
def analysed_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store of matches of two presets in several months, every deal analysed from trick
    11 on (microseconds a deal, no budget: the same rows on any machine)."""
    db = str(tmp_path_factory.mktemp("analysed") / "k.duckdb")
    with Store.open(db) as store:
        for name in PRESETS:
            matches = [simulate_match(preset(name), s * 3_000_000 + 1) for s in range(3)]
            store.ingest_matches(matches, source=f"sim-{name}")
        summary = analyse_store(store, from_play=40)
        assert summary.deals > 0 and summary.unsolved == summary.costs_unsolved == 0
        assert summary.costly > 0  # some play_costs rows price a card that cost something
    return db


def test_an_analysed_store_exports_its_par_rows_and_duckdb_reads_the_same_rows_back(
    analysed_path: str, tmp_path: Path
) -> None:
    out = tmp_path / "parquet"
    summary = export_parquet(analysed_path, out)
    with Store.open(analysed_path, read_only=True) as store:
        months = set(store.con.execute(_MONTHS).fetchall())
        stored = {
            t: _normal(store.con.execute(f"SELECT * FROM {t}").fetchall()) for t in PAR_TABLES
        }
        names = {
            t: [r[0] for r in store.con.execute(f"DESCRIBE {t}").fetchall()] for t in PAR_TABLES
        }
    manifest = json.loads((out / "kingrec_export.json").read_text(encoding="utf-8"))
    reader = duckdb.connect()
    for table in PAR_TABLES:
        assert summary.rows[table] == manifest["rows"][table] == len(stored[table]) > 0, table
        assert table in manifest["partitioning"]["tables"]
        glob = str(out / table / "**" / "*.parquet")
        columns = ", ".join(f'"{n}"' for n in names[table])
        back = reader.execute(
            f"SELECT {columns} FROM read_parquet(?, hive_partitioning = true)", [glob]
        ).fetchall()
        assert _normal(back) == stored[table], table
        # every analysed match's partition is there, as for the other per-match tables
        parts = reader.execute(
            "SELECT DISTINCT preset, month FROM read_parquet(?, hive_partitioning = true)", [glob]
        ).fetchall()
        assert set(parts) == months, table
    joined = reader.execute(
        "SELECT count(*) FROM read_parquet(?, hive_partitioning = true) p "
        "JOIN read_parquet(?, hive_partitioning = true) d USING (match_key, deal)",
        [str(out / "deal_par" / "**" / "*.parquet"), str(out / "deals" / "**" / "*.parquet")],
    ).fetchall()
    assert joined == [(summary.rows["deal_par"],)]  # joinable with the exported deals


_MONTHS = "SELECT preset, strftime(coalesce(start_time, ingested_at), '%Y-%m') FROM matches"


def test_an_existing_directory_is_kept_unless_overwrite(store_path: str, tmp_path: Path) -> None:
    out = tmp_path / "parquet"
    out.mkdir()
    (out / "mine.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(StoreError, match="exists already"):
        export_parquet(store_path, out)
    assert (out / "mine.txt").exists()
    summary = export_parquet(store_path, out, overwrite=True)
    assert not (out / "mine.txt").exists()
    assert summary.files > 10 and summary.bytes > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parquet"]


def test_an_interrupted_export_leaves_no_half_directory(store_path: str, tmp_path: Path) -> None:
    def interrupt(table: str, rows: int) -> None:
        if table == "tricks":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        export_parquet(store_path, tmp_path / "parquet", progress=interrupt)
    assert list(tmp_path.iterdir()) == []


_KILLED = """
import os, signal, sys
from kingrec.store.export import export_parquet
def die(table, rows):
    if table == "plays":
        os.kill(os.getpid(), signal.SIGKILL)
export_parquet(sys.argv[1], sys.argv[2], progress=die)
"""


def test_an_export_killed_outright_is_cleared_by_the_next(store_path: str, tmp_path: Path) -> None:
    out = tmp_path / "parquet"
    subprocess.run([sys.executable, "-c", _KILLED, store_path, str(out)], check=False)
    assert not out.exists()
    assert [p.name.startswith(".kingrec-export-") for p in tmp_path.iterdir()] == [True]
    export_parquet(store_path, out)
    assert [p.name for p in tmp_path.iterdir()] == ["parquet"]


def test_a_store_open_for_writing_exports_through_its_locked_connection(
    store_path: str, tmp_path: Path
) -> None:
    with Store.open(store_path) as store:
        summary = export_parquet(store, tmp_path / "parquet")
        refused = store.con.execute("SELECT current_setting('enable_external_access')")
        assert refused.fetchall() == [(False,)]
    assert summary.rows["matches"] == sum(PRESETS.values())


# -- Spark -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    if os.environ.get("CI"):  # the dev extra installs pyspark: CI never skips this
        import pyspark.sql as pyspark_sql
    else:
        pyspark_sql = pytest.importorskip("pyspark.sql", reason="pip install 'kingrec[spark]'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = (
            pyspark_sql.SparkSession.builder.master("local[2]")
            .appName("kingrec-tests")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=ERROR")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
    yield session
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.stop()


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")
def test_spark_over_the_export_answers_as_the_store_does(
    spark: Any, store_path: str, exported: Path
) -> None:
    for table in ("matches", "deals", "tricks", "plays"):  # what the questions read
        spark.read.parquet(str(exported / table)).createOrReplaceTempView(table)
    expected = _duckdb_answers(store_path)
    for name, sql in QUESTIONS.items():
        got = _normal([tuple(row) for row in spark.sql(sql).collect()])
        assert got == expected[name], name
        assert got, name
    assert len(expected["plays_per_card"]) == 52
    preset_of = spark.sql("SELECT DISTINCT preset FROM plays").collect()
    assert {row[0] for row in preset_of} == set(PRESETS)


def _readme_spark_snippet() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Scale out with Spark", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert found is not None
    return found.group(1)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")
def test_the_readme_spark_example_runs_and_prints_the_stores_numbers(
    spark: Any, store_path: str, tmp_path: Path
) -> None:
    # Spark's JVM keeps the folder it started in: the example's relative paths made absolute.
    snippet = _readme_spark_snippet()
    snippet = snippet.replace('"kingrec.duckdb"', repr(store_path))
    snippet = snippet.replace('"kingrec-parquet', f'"{tmp_path}/kingrec-parquet')
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(snippet, {"__name__": "readme"})
    expected = dict(_duckdb_answers(store_path)["rifki_early_end_by_trick"])
    shown = re.findall(r"^\|\s*(\d+)\|\s*(\d+)\|$", printed.getvalue(), flags=re.M)
    assert {int(t): int(n) for t, n in shown} == expected
    assert expected


# -- the command -----------------------------------------------------------------------------


def _kingrec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "kingrec"), *args]
    env = {k: v for k, v in os.environ.items() if k != "KINGREC_DB"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_kingrec_export_writes_the_parquet_and_says_what(store_path: str, tmp_path: Path) -> None:
    done = _kingrec("export", "--parquet", "out", "--db", store_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        r"exported 10 matches \(\d+ plays\) to out: \d+ files, [\d.]+ MB in [\d.]+ s\n",
        done.stderr,  # the summary goes where kingrec's reports go, as simulate's does
    ), done.stderr
    assert (tmp_path / "out" / "plays").is_dir()
    again = _kingrec("export", "--parquet", "out", "--db", store_path, cwd=tmp_path)
    assert again.returncode == 2
    assert again.stderr.startswith("kingrec: error: out: exists already")
    missing = _kingrec("export", "--parquet", "other", cwd=tmp_path)  # no kingrec.duckdb here
    assert missing.returncode == 2
    assert "kingrec.duckdb: no store there" in missing.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
