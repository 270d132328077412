"""docs/STORE.md is held to the code: its schema tables are a new store's own catalogue (the
types and the ``COMMENT ON`` texts), its stats list is ``kingrec.store.stats``, and every
question in SQL it shows runs, in the store and in the stock DuckDB CLI."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

from kingrec.errors import RecordFileError
from kingrec.store import Store
from kingrec.store.schema import ENUMS
from kingrec.store.stats import STATS

ROOT = Path(__file__).resolve().parent.parent
DUCKDB_CLI = shutil.which("duckdb", path=str(Path(sys.executable).parent)) or shutil.which("duckdb")
STORE_MD = ROOT / "docs" / "STORE.md"
ORDER = ["matches", "players", "deals", "tricks", "plays", "findings", "damage", "records",
         "deal_par", "play_costs", "cards", "kingrec_meta"]  # fmt: skip


def _kind(data_type: str) -> str:
    """A column's type as the DDL names it: an ENUM by its type's name."""
    for name, values in ENUMS.items():
        if data_type == f"ENUM({', '.join(repr(v) for v in values)})":
            return name
    return data_type


def schema_markdown() -> str:
    """The schema section of docs/STORE.md, read from a new store's own catalogue: every
    table and view an analyst queries, its comment, its columns with their types and
    comments (the ``*_base`` tables behind the views are left to the views)."""
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "k.duckdb")
        Store.open(path).close()
        con = duckdb.connect(path, read_only=True)
        try:
            about = dict(con.execute(
                "SELECT table_name, comment FROM duckdb_tables() UNION ALL "
                "SELECT view_name, comment FROM duckdb_views() WHERE NOT internal"
            ).fetchall())  # fmt: skip
            views = {r[0] for r in con.execute(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}  # fmt: skip
            columns = con.execute(
                "SELECT table_name, column_name, data_type, comment FROM duckdb_columns() "
                "ORDER BY table_name, column_index"
            ).fetchall()
        finally:
            con.close()
    assert set(ORDER) == {name for name in about if not name.endswith("_base")}
    out: list[str] = []
    for table in ORDER:
        kind = " (a view)" if table in views else ""
        out += [f"### `{table}`{kind}", "", about[table], ""]
        out += ["| column | type | meaning |", "|---|---|---|"]
        for name, column, data_type, comment in columns:
            if name == table:
                text = (comment or "").replace("|", "\\|")
                out.append(f"| `{column}` | `{_kind(data_type)}` | {text} |")
        out.append("")
    out += ["### Types", "", "| type | values |", "|---|---|"]
    out += [
        f"| `{name}` | {', '.join(f'`{v}`' for v in values)} |" for name, values in ENUMS.items()
    ]
    return "\n".join(out) + "\n"


def _section(text: str, name: str) -> str:
    found = re.search(f"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", text, flags=re.S)
    assert found, name
    return found.group(1)


def test_the_schema_in_the_docs_is_the_ddl() -> None:
    text = STORE_MD.read_text(encoding="utf-8")
    # After a change to the DDL: python tests/test_store_docs.py --write
    assert _section(text, "schema") == schema_markdown()


def test_the_docs_list_every_stat() -> None:
    listed = _section(STORE_MD.read_text(encoding="utf-8"), "stats")
    assert listed == "".join(f"| `{s.name}` | {s.title} | {s.description} |\n"
                             for s in STATS.values())  # fmt: skip


def _questions() -> list[str]:
    text = STORE_MD.read_text(encoding="utf-8")
    part = text[text.index("## Questions in SQL") : text.index("## The file")]
    return re.findall(r"^```sql\n(.*?)^```", part, flags=re.M | re.S)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("docs") / "k.duckdb")
    with Store.open(db) as filled:
        for path in sorted((ROOT / "samples").glob("*/*.krec"))[:60]:
            try:
                filled.ingest_file(str(path))
            except RecordFileError:  # the damaged samples that are no record file at all
                continue
    return db


def test_there_are_questions_in_sql() -> None:
    assert len(_questions()) >= 8


@pytest.mark.parametrize("sql", _questions(), ids=lambda q: q.split("\n")[0][:40])
def test_each_question_in_the_docs_runs_in_the_store_and_in_the_duckdb_cli(
    store: str, sql: str
) -> None:
    with Store.open(store, read_only=True) as opened:
        rows = [r for b in opened.query(sql).batches() for r in b.to_pylist()]
    assert rows
    if DUCKDB_CLI is not None:
        result = subprocess.run(
            [DUCKDB_CLI, "-csv", "-readonly", store, "-c", sql],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert len(result.stdout.splitlines()) >= 1 + len(rows)


def _write() -> None:
    """Put the generated sections into docs/STORE.md."""
    stats = "".join(f"| `{s.name}` | {s.title} | {s.description} |\n" for s in STATS.values())
    text = STORE_MD.read_text(encoding="utf-8")
    for name, body in (("schema", schema_markdown()), ("stats", stats)):
        begin, end = f"<!-- {name}:begin -->\n", f"<!-- {name}:end -->"
        text = text[: text.index(begin) + len(begin)] + body + text[text.index(end) :]
    STORE_MD.write_text(text, encoding="utf-8")


if __name__ == "__main__":  # python tests/test_store_docs.py --write: regenerate the sections
    if sys.argv[1:] == ["--write"]:
        _write()
