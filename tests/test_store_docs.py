"""docs/STORE.md is held to the code: its schema tables are the DDL's, its stats list is
``kingrec.store.stats``, and every store command it names exists with help and examples."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kingrec.store import Store
from kingrec.store.schema import ENUMS, TABLE_COMMENTS, TABLES, VIEWS
from kingrec.store.stats import STATS

ROOT = Path(__file__).resolve().parent.parent
DUCKDB_CLI = shutil.which("duckdb", path=str(Path(sys.executable).parent)) or shutil.which("duckdb")
STORE_MD = ROOT / "docs" / "STORE.md"
ORDER = ["matches", "players", "deals", "tricks", "plays", "findings", "damage", "records",
         "cards", "kingrec_meta"]  # fmt: skip
DERIVED_TYPES = {"trick": "UTINYINT", "position": "UTINYINT", "suit": "suit", "rank": "UTINYINT"}


def _row(name: str, kind: str, about: str) -> str:
    kind = kind.replace(" PRIMARY KEY", " (key)")
    about = about.replace("|", "\\|")
    return f"| `{name}` | `{kind}` | {about} |"


def schema_markdown() -> str:
    """The schema section of docs/STORE.md, as the DDL defines it."""
    out: list[str] = []
    for table in ORDER:
        if table in VIEWS:
            about, _, derived = VIEWS[table]
            columns = [*TABLES[f"{table}_base"],
                       *((n, DERIVED_TYPES[n], text) for n, text in derived)]  # fmt: skip
            out += [f"### `{table}` (a view over `{table}_base`)", "", about, ""]
        else:
            columns = TABLES[table]
            out += [f"### `{table}`", "", TABLE_COMMENTS[table], ""]
        out += ["| column | type | meaning |", "|---|---|---|"]
        out += [_row(*column) for column in columns]
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
    assert _section(text, "schema") == schema_markdown()
    assert set(ORDER) | {"plays_base"} == set(TABLES) | set(VIEWS)


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
            except Exception:
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


if __name__ == "__main__":  # python tests/test_store_docs.py: print the sections to paste
    sys.stdout.write(schema_markdown())
    sys.stdout.write("".join(f"| `{s.name}` | {s.title} | {s.description} |\n"
                             for s in STATS.values()))  # fmt: skip
