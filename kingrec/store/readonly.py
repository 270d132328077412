"""What a query may be: a read of the store's own tables and views, judged on its parse tree.

DuckDB calls ``WITH d AS (DELETE … RETURNING 1) SELECT …`` a SELECT, so the statement's
type says nothing about what it does. This module judges the statement DuckDB itself
parsed (``json_serialize_sql``: the tree the binder will see, not the text an attacker
wrote) by ALLOW-LISTS, so that whatever DuckDB adds later is refused until named here:

- every query node is a SELECT, a set operation or a (recursive) CTE — a DELETE, UPDATE
  or INSERT node anywhere (a CTE, a subquery, nested) refuses the statement;
- every relation read is a table or view of the store (``main`` of the store's own
  database) or a CTE in scope: no system views, no other catalogs, no file or Python
  replacement scans;
- every table function is one that computes rows from its arguments (``range``,
  ``unnest``…) or describes the store's tables (``duckdb_columns()``…): no
  ``query()``/``query_table()``, readers, ``duckdb_settings()``/``duckdb_databases()``;
- no scalar function that tells of the session rather than the data (settings, the
  database's name, the version, sequences, sleeps).

Statements that do not serialize (anything but a SELECT: PIVOT, SET, PRAGMA…) are refused.
This is the first of two walls: ``kingrec.store.query`` also runs every query in a
READ ONLY transaction that is rolled back, where DuckDB itself refuses any write.
Refusing before running matters even so: a writing statement that ran, even rolled back,
would take write locks the store's writer could conflict with (a failed upload).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import duckdb

from ..errors import QueryError, QueryRefusedError

__all__ = ["ALLOWED_TABLE_FUNCTIONS", "check_read_only", "store_relations"]

# The parse tree's query nodes and relations that read (any other refuses the statement).
_QUERY_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})
_RELATIONS = frozenset(
    {"BASE_TABLE", "SUBQUERY", "JOIN", "EXPRESSION_LIST", "EMPTY", "TABLE_FUNCTION", "PIVOT"}
)
_SHOWS = frozenset({"DESCRIBE", "SUMMARY"})  # DESCRIBE q, SUMMARIZE q (of a query it holds)

ALLOWED_TABLE_FUNCTIONS = frozenset(
    {
        # rows from their arguments
        "range",
        "generate_series",
        "unnest",
        "repeat",
        "repeat_row",
        "json_each",
        "json_tree",
        "summary",
        # the store's own description (names, types, comments: what docs/STORE.md shows)
        "duckdb_tables",
        "duckdb_views",
        "duckdb_columns",
        "duckdb_constraints",
        "duckdb_functions",
        "duckdb_types",
        "duckdb_keywords",
    }
)

# Scalar functions that answer about the session, not the data: its settings and
# variables, the database's name, the server's DuckDB, sequences (nextval writes), a sleep
# that no interrupt cuts short. Every other scalar, aggregate and window function computes
# from its arguments.
_SESSION_FUNCTIONS = frozenset(
    {
        "current_setting",
        "getvariable",
        "current_catalog",
        "current_database",
        "current_schema",
        "current_schemas",
        "current_query",
        "current_query_id",
        "current_connection_id",
        "current_transaction_id",
        "current_role",
        "current_user",
        "session_user",
        "user",
        "in_search_path",
        "txid_current",
        "version",
        "get_block_size",
        "nextval",
        "currval",
        "setval",
        "stats",
        "parse_duckdb_log_message",
    }
)
_SESSION_PREFIXES = ("pg_", "has_", "duckdb_")  # pg_sleep, pg_postmaster_start_time, privileges
_HARMLESS = frozenset({"pg_typeof", "pg_size_pretty"})


def store_relations(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """The store's own tables and views (lower case), as ``con`` sees them."""
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT temporary "
        "UNION ALL SELECT view_name FROM duckdb_views() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT internal AND NOT temporary"
    ).fetchall()
    return frozenset(str(name).lower() for (name,) in rows)


def _known_elsewhere(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether DuckDB knows a relation ``name`` outside the store (a system view…)."""
    rows = con.execute(
        "SELECT count(*) FROM (SELECT table_name AS n FROM duckdb_tables() "
        "UNION ALL SELECT view_name FROM duckdb_views()) WHERE lower(n) = ?",
        [name],
    ).fetchall()
    return bool(rows[0][0])


def check_read_only(
    con: duckdb.DuckDBPyConnection, sql: str, relations: frozenset[str], database: str
) -> None:
    """Refuse ``sql`` (``QueryRefusedError``) unless it only reads ``relations`` of
    ``database`` with the functions above; ``QueryError`` when it does not parse."""
    try:
        rows = con.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchall()
    except duckdb.InterruptException:
        raise  # stopped: the caller knows why
    except duckdb.Error as exc:  # the parser's own message, not the statement's effect
        raise QueryError(f"the SQL does not parse: {_first_line(exc)}") from None
    tree: dict[str, Any] = json.loads(str(rows[0][0])) if rows else {"error": True}
    if tree.get("error"):
        if tree.get("error_type") == "parser":
            raise QueryError(f"the SQL does not parse: {tree.get('error_message', '')}")
        raise QueryRefusedError("only queries are allowed (SELECT, WITH … SELECT, VALUES, FROM …)")
    statements: list[Any] = tree.get("statements") or []
    if len(statements) != 1:
        raise QueryRefusedError(f"one SQL statement at a time, please (got {len(statements)})")
    _Walk(con, relations, database.lower()).visit(statements[0], frozenset())


class _Walk:
    def __init__(
        self, con: duckdb.DuckDBPyConnection, relations: frozenset[str], database: str
    ) -> None:
        self.con = con
        self.relations = relations
        self.database = database

    def visit(self, item: Any, ctes: frozenset[str]) -> None:
        if isinstance(item, list):
            for part in item:
                self.visit(part, ctes)
            return
        if not isinstance(item, dict):
            return
        ctes = ctes | _cte_names(item)
        if "class" in item:
            self._expression(item)
        elif "type" in item:
            self._node(item, ctes)
        if item.get("type") == "TABLE_FUNCTION" and "class" not in item:
            # the function was judged as a table function; its arguments are expressions
            self.visit((item.get("function") or {}).get("arguments"), ctes)
            item = {k: v for k, v in item.items() if k != "function"}
        for value in item.values():
            if isinstance(value, dict | list):
                self.visit(value, ctes)

    def _node(self, node: dict[str, Any], ctes: frozenset[str]) -> None:
        kind = str(node["type"])
        if kind.endswith("_NODE"):  # a query node: the statement's (or a CTE's) body
            if kind not in _QUERY_NODES:
                verb = kind.removesuffix("_QUERY_NODE").removesuffix("_NODE")
                raise QueryRefusedError(f"a query may only read: it holds {verb}, which writes")
            return
        if "sample" not in node or "alias" not in node:
            return  # not a relation (an ORDER BY item, a modifier…): its parts are walked
        if kind == "BASE_TABLE":
            self._relation(node, ctes)
        elif kind == "TABLE_FUNCTION":
            self._table_function(node.get("function") or {})
        elif kind == "SHOW_REF":
            if node.get("show_type") not in _SHOWS or not node.get("query"):
                raise QueryRefusedError("SHOW lists more than the store: query its tables instead")
        elif kind not in _RELATIONS:
            raise QueryRefusedError(f"not allowed in a query: {kind.replace('_', ' ')}")

    def _relation(self, table: dict[str, Any], ctes: frozenset[str]) -> None:
        name = str(table.get("table_name", "")).lower()
        schema = str(table.get("schema_name", "")).lower()
        catalog = str(table.get("catalog_name", "")).lower()
        if not schema and not catalog and name in ctes:
            return
        if name in self.relations and schema in ("", "main") and catalog in ("", self.database):
            return
        shown = ".".join(p for p in (catalog, schema, str(table.get("table_name", ""))) if p)
        if (
            not schema
            and not catalog
            and name.isidentifier()
            and not _known_elsewhere(self.con, name)
        ):
            raise QueryError(
                f"no table or view {shown!r} in the store "
                f"(the store's are {', '.join(sorted(self.relations))})"
            )
        raise QueryRefusedError(
            f"not allowed: {shown!r} is not a table or view of the store "
            f"(the store's are {', '.join(sorted(self.relations))})"
        )

    def _table_function(self, function: dict[str, Any]) -> None:
        name = str(function.get("function_name", "")).lower()
        if name in ALLOWED_TABLE_FUNCTIONS and str(function.get("catalog", "")) in ("", "system"):
            return
        raise QueryRefusedError(
            f"not allowed: the table function {name}() reaches beyond the store "
            f"(allowed: {', '.join(sorted(ALLOWED_TABLE_FUNCTIONS))})"
        )

    def _expression(self, expression: dict[str, Any]) -> None:
        name = expression.get("function_name")
        if not isinstance(name, str):
            return
        name = name.lower()
        if name in _HARMLESS:
            return
        if name in _SESSION_FUNCTIONS or name.startswith(_SESSION_PREFIXES):
            raise QueryRefusedError(
                f"not allowed: {name}() tells of the server's session, not of the store's data"
            )


def _cte_names(node: dict[str, Any]) -> frozenset[str]:
    entries: Iterable[Any] = (node.get("cte_map") or {}).get("map") or ()
    return frozenset(str(e.get("key", "")).lower() for e in entries if isinstance(e, dict))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
