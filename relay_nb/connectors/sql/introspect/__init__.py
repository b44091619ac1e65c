"""Reading a live database's catalog: one module per engine that has a hand-written reader
(``sqlite``, ``postgres``, ``mysql``, ``duckdb``, ``clickhouse``), SQLAlchemy's inspector for
the rest (``generic``), the builder they all fill (``common``), and the entry points in
``read``."""

from relay_nb.connectors.sql.introspect.read import fingerprint, introspect

__all__ = ["fingerprint", "introspect"]
