"""Catalog lookups around the allowlist (relay_nb/sql/guard/lookups.py).

* every ``catalog-*`` payload of the adversarial corpus is first run as the database's
  owner and shown to reveal something about a table the allowlist hides (its comment, its
  name, or that it exists, which a run naming a table that does not exist tells apart), so
  the refusal that follows cannot pass vacuously; then the real connector refuses it;
* the list of catalog functions is re-derived from the live PostgreSQL server (built-ins and
  every trusted extension it ships), so a new version or extension cannot add one silently;
* every listed function is refused in every family, every reviewed value function passes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from sqlalchemy.pool import NullPool

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard import lookups as guard_catalog
from relay_nb.sql.guard import rules as guard_rules
from relay_nb.sql.guard.query import guard_query
from relay_nb.testing.seed import ALLOWED_TABLES, scratch_database

CORPUS = Path(__file__).with_name("corpus")
CATALOG_ENTRIES = [
    e
    for e in yaml.safe_load((CORPUS / "adversarial.yaml").read_text())
    if e["id"].startswith("catalog-")
]
HIDDEN_NAMES = {"secrets": "no_such_table_x", "internal": "no_such_schema_x"}
"""What the payloads name, and a name that exists nowhere, for the control run."""
SECRET_TEXT = ("secrets", "Must never be exposed", "internal.audit")


def _outcome(engine: sa.Engine, sql: str) -> tuple[str, str]:
    """("rows", repr of the rows) or ("error", the driver's exception class)."""
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        try:
            cursor.execute(sql)
            return "rows", repr(cursor.fetchall())
        except Exception as error:  # the owner's error is evidence too: it differs
            return "error", type(error).__name__
        finally:
            cursor.close()
    finally:
        try:
            raw.rollback()
        finally:
            raw.close()


def _control(sql: str) -> str:
    for name, absent in HIDDEN_NAMES.items():
        sql = re.sub(rf"\b{name}\b", absent, sql)
    return sql


def test_there_are_catalog_payloads_for_the_dialects_where_the_class_applies() -> None:
    dialects = {d for e in CATALOG_ENTRIES for d in e["dialects"]}
    assert {"postgres", "sqlite"} <= dialects
    assert sum("postgres" in e["dialects"] for e in CATALOG_ENTRIES) >= 20


async def test_catalog_payloads_reveal_a_hidden_table_and_are_refused(shop_db) -> None:
    entries = [e for e in CATALOG_ENTRIES if shop_db.dialect in e["dialects"]]
    if not entries:
        pytest.skip(f"no catalog lookup reveals a hidden table on {shop_db.dialect}")
    owner = sa.create_engine(shop_db.admin_url, poolclass=NullPool)
    shop = SQLConnector(
        "shop", shop_db.ro_url, tables=list(ALLOWED_TABLES), row_limit=200, statement_timeout_s=10
    )
    (tool,) = [t for t in shop.tools() if t.name == "query_shop"]
    problems: list[str] = []
    try:
        for entry in entries:
            seen = _outcome(owner, entry["sql"])
            control = _outcome(owner, _control(entry["sql"]))
            named = seen[0] == "rows" and any(
                text in seen[1] and text not in entry["sql"] for text in SECRET_TEXT
            )
            if not named and seen == control:
                problems.append(f"{entry['id']}: reveals nothing as the owner ({seen})")
            result = await tool.run({"sql": entry["sql"]})
            if not (result.is_error and result.rule == entry["rule"]):
                problems.append(f"{entry['id']}: not refused with {entry['rule']}")
    finally:
        shop.close()
        owner.dispose()
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------
# The list, re-derived from the live server

DERIVATION = """
WITH alias_types AS (  -- oid and the types an implicit binary cast makes of it: regclass …
    SELECT 'oid'::regtype::oid AS t
    UNION SELECT casttarget::oid FROM pg_cast
    WHERE castsource = 'oid'::regtype AND castmethod = 'b' AND castcontext = 'i'
), callable AS (       -- an 'internal' argument cannot be written in SQL
    SELECT p.proname, p.proargtypes::oid[] AS ins, p.prorettype
    FROM pg_proc p
    WHERE NOT 'internal'::regtype = ANY (p.proargtypes::oid[])
)
SELECT DISTINCT proname::text FROM callable
WHERE (ins && ARRAY(SELECT t FROM alias_types) OR prorettype IN (SELECT t FROM alias_types))
  AND proname !~ '^pg_'
UNION SELECT typname::text FROM pg_type WHERE oid IN (SELECT t FROM alias_types)
  AND typname <> 'oid'
"""


@pytest.fixture(scope="module")
def derived_names(pg_urls) -> set[str]:
    """Run :data:`DERIVATION` in a scratch database holding every trusted extension."""
    with scratch_database(pg_urls.admin, "relay_catalog") as url:
        scratch = sa.create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        try:
            with scratch.connect() as conn:
                trusted = conn.exec_driver_sql(
                    "SELECT DISTINCT name FROM pg_available_extension_versions WHERE trusted"
                ).scalars()
                for extension in sorted(trusted):
                    conn.exec_driver_sql(f'CREATE EXTENSION IF NOT EXISTS "{extension}" CASCADE')
                return set(conn.exec_driver_sql(DERIVATION).scalars())
        finally:
            scratch.dispose()


def test_every_function_the_server_has_for_oids_is_classified(derived_names: set[str]) -> None:
    assert {"obj_description", "format_type", "to_tsvector", "regtype"} <= derived_names
    refused_by_prefix = {n for n in derived_names if n.startswith(guard_rules.FILE_PREFIXES)}
    classified = guard_catalog.CATALOG_FUNCTIONS | guard_catalog.VALUE_FUNCTIONS
    unclassified = derived_names - classified - refused_by_prefix
    assert not unclassified, f"classify in guard_catalog.py: {sorted(unclassified)}"
    stale = classified - derived_names
    assert not stale, f"no longer on the server: {sorted(stale)}"
    assert not guard_catalog.CATALOG_FUNCTIONS & guard_catalog.VALUE_FUNCTIONS


# --------------------------------------------------------------------------------------------
# The guard refuses the list, in every family, and lets the reviewed value functions pass

_SCHEMAS = {"postgres": "public", "duckdb": "main", "mysql": "shop", "sqlite": None}


def _guard(sql: str, dialect: str):
    schema = _SCHEMAS[dialect]
    return guard_query(
        sql,
        dialect=dialect,
        allowed_tables={(schema, "orders")},
        default_schema=schema,
        row_limit=10,
    )


@pytest.mark.parametrize("dialect", sorted(_SCHEMAS))
def test_catalog_functions_are_refused_in_every_family(dialect: str) -> None:
    refused = guard_rules.CATALOG_FUNCTIONS
    assert refused >= guard_catalog.EXTENSION_CATALOG_FUNCTIONS
    for name in sorted(refused):
        with pytest.raises(UnsafeQueryError) as caught:
            _guard(f"SELECT {name}(1) AS x FROM orders", dialect)
        assert caught.value.rule in ("forbidden_function", "file_access"), name


def test_value_functions_and_text_search_pass() -> None:
    danger_word = {"get_current_ts_config"}  # "config": refused by the danger words instead
    for name in sorted(guard_catalog.VALUE_FUNCTIONS - danger_word):
        _guard(f"SELECT {name}(id) AS x FROM orders", "postgres")
    for sql in (
        "SELECT to_tsvector('english'::regconfig, 'running dogs') AS v",
        "SELECT CAST('simple' AS regconfig) AS c, 1::oid AS o",
        "SELECT pg_typeof(total) AS t, COUNT(*) AS n FROM orders GROUP BY pg_typeof(total)",
        "SELECT id FROM orders WHERE pg_typeof(total)::text = 'numeric' ORDER BY pg_typeof(id)",
    ):
        _guard(sql, "postgres")


@pytest.mark.parametrize("type_name", sorted(guard_catalog.CATALOG_TYPES))
def test_every_catalog_type_is_refused_as_a_cast(type_name: str) -> None:
    for sql in (f"SELECT 'orders'::{type_name} AS x", f"SELECT CAST(1 AS {type_name}) AS x"):
        with pytest.raises(UnsafeQueryError) as caught:
            _guard(sql, "postgres")
        assert caught.value.rule == "table_not_allowed"


def test_duckdb_s_postgres_catalog_helpers_reveal_nothing(duckdb_shop) -> None:
    """Why DuckDB has no catalog-* payloads: its PostgreSQL-compatible helpers are macros
    that answer the same for a hidden table as for none (and it has no regclass type). They
    are refused there all the same (shared list); if DuckDB starts answering, this fails."""
    import duckdb

    con = duckdb.connect(str(duckdb_shop), read_only=True)
    try:
        for template in (
            "SELECT obj_description({oid}, 'pg_class')",
            "SELECT col_description({oid}, 1)",
            "SELECT has_table_privilege('{name}', 'SELECT')",
            "SELECT has_column_privilege('{name}', 'api_key', 'SELECT')",
        ):
            seen = con.execute(template.format(oid=_duckdb_oid(con), name="secrets")).fetchall()
            control = con.execute(template.format(oid=-1, name="no_such_table_x")).fetchall()
            assert seen == control, template
        with pytest.raises(duckdb.CatalogException):
            con.execute("SELECT 'secrets'::regclass")
    finally:
        con.close()


def _duckdb_oid(con) -> int:
    query = "SELECT table_oid FROM duckdb_tables() WHERE table_name = 'secrets'"
    (oid,) = con.execute(query).fetchone()
    return oid


def test_the_allowlist_is_built_once_per_catalog_and_again_when_it_changes() -> None:
    """Issue 22: the guard's cost must not grow with the catalog. A catalog hands the same
    allowlist object to every query; the guard folds it for its dialect once."""
    from relay_nb.sql.catalog.model import Catalog, ColumnInfo, TableInfo
    from relay_nb.sql.guard import query as guard_module

    def table(name: str) -> TableInfo:
        return TableInfo(
            schema_name="public", name=name, columns=(ColumnInfo(name="id", type="int"),)
        )

    catalog = Catalog(dialect="postgres", default_schema="public", tables=(table("orders"),))
    assert catalog.allowlist() is catalog.allowlist()
    before = guard_module._folded.cache_info()
    for _ in range(3):
        guard_module.guard_query(
            "SELECT id FROM orders", dialect="postgres", allowed_tables=catalog.allowlist(),
            default_schema="public", row_limit=10,
        )  # fmt: skip
    after = guard_module._folded.cache_info()
    assert after.misses - before.misses <= 1 and after.hits - before.hits >= 2  # once a query
    grown = catalog.model_copy(update={"tables": (table("orders"), table("refunds"))})
    assert ("public", "refunds") in grown.allowlist()  # not the copied cache of the old one
    assert ("public", "refunds") not in catalog.allowlist()
