"""``Catalog.find``: the lookup every query makes, answered from dicts built once per
catalog, with the same answers as a scan of the tables in order."""

from __future__ import annotations

import itertools
import zlib

import pytest

from relay_nb.sql.catalog.model import Catalog, TableInfo


def scanned(catalog: Catalog, name: str) -> TableInfo | None:
    """The reference: the rules of ``find`` as a scan (qualified name, then the name in the
    default schema or in no schema, then a name only one schema has)."""
    wanted = name.lower()
    for table in catalog.tables:
        if table.qualified_name.lower() == wanted:
            return table
    for table in catalog.tables:
        if table.name.lower() == wanted and (
            table.schema_name is None
            or (catalog.default_schema or "").lower() == table.schema_name.lower()
        ):
            return table
    matches = [t for t in catalog.tables if t.name.lower() == wanted]
    return matches[0] if len(matches) == 1 else None


SCHEMAS = (None, "public", "Sales", "sales", "a.b")
NAMES = ("orders", "Orders", "items", "public.orders", "b.orders")


@pytest.mark.parametrize("default", [None, "public", "SALES", "a.b"])
def test_find_answers_as_the_scan_does(default):
    tables = tuple(
        TableInfo(schema_name=schema, name=name)
        for schema, name in itertools.product(SCHEMAS, NAMES)
        if zlib.crc32(repr((schema, name, default)).encode()) % 3  # a mix per default
    )
    catalog = Catalog(dialect="postgres", default_schema=default, tables=tables)
    asked = {n for t in tables for n in (t.name, t.qualified_name, t.qualified_name.upper())}
    asked |= {"missing", "a.b.orders", "sales.items", "SALES.ORDERS"}
    for name in sorted(asked):
        assert catalog.find(name) is scanned(catalog, name), name


def test_a_copy_with_other_tables_is_not_answered_from_the_old_index():
    old = Catalog(
        dialect="sqlite", default_schema=None, tables=(TableInfo(schema_name=None, name="a"),)
    )
    assert old.find("a") is not None
    new = old.model_copy(update={"tables": (TableInfo(schema_name=None, name="b"),)})
    assert new.find("a") is None and new.find("b") is new.tables[0]
