"""The DuckDB store: every record you have in one embedded file, asked anything in SQL.

``Store.open(path)`` opens (or creates) a store; ``ingest_file`` / ``ingest_payloads`` /
``ingest_matches`` store records, judged on the way in; ``query`` runs one read-only
statement under limits; ``list_matches`` and ``get_match`` serve the catalogue;
``export_parquet`` writes every table as hive-partitioned Parquet for a distributed engine.
The tables are documented in ``kingrec.store.schema`` (and in the file itself, as comments).
"""

from __future__ import annotations

from .ingest import RecordVerdict
from .query import QueryResult
from .store import IngestSummary, Store

__all__ = ["IngestSummary", "QueryResult", "RecordVerdict", "Store"]
