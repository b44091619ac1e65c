"""MariaDB as a dialect of its own (relay_nb/sql/dialects.py).

sqlglot 30 has no MariaDB: its MySQL dialect writes MySQL 8, so ``name REGEXP 'x'`` came back
from the guard as ``REGEXP_LIKE(name, 'x')``, which MariaDB does not have. The connector
guards a MariaDB server in the ``mariadb`` dialect, known once it has connected; the MySQL
family's rules are the same. The corpus runs its "mysql" entries under both dialects
(test_guard.py) and through the connector on MariaDB (test_corpus_live.py).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool
from sqlglot.dialects.dialect import Dialect

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.dialects import MariaDB, guard_dialect
from relay_nb.sql.guard.policies import policy_for
from relay_nb.sql.guard.policies.mysql import MySQLPolicy
from relay_nb.sql.guard.query import guard_query
from relay_nb.testing.seed import ALLOWED_TABLES

TABLES = {("shop", "customers"), ("shop", "orders"), ("shop", "products")}


def written(sql: str, dialect: str = "mariadb") -> str:
    guarded = guard_query(
        sql, dialect=dialect, allowed_tables=TABLES, default_schema="shop", row_limit=50
    )
    return guarded.sql.removesuffix(" LIMIT 50")


def test_mariadb_is_registered_with_sqlglot_and_guarded_as_the_mysql_family() -> None:
    assert isinstance(Dialect.get_or_raise("mariadb"), MariaDB)
    assert policy_for("mariadb") is MySQLPolicy is policy_for("mysql")
    mysql = type(Dialect.get_or_raise("mysql"))
    assert issubclass(MariaDB.tokenizer_class, mysql.tokenizer_class)
    assert MariaDB.parser_class is mysql.parser_class  # MySQL's syntax, read the same way


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "SELECT id FROM customers WHERE name REGEXP '^A'",
            "SELECT id FROM customers WHERE name REGEXP '^A'",
        ),
        (
            "SELECT id FROM customers WHERE name RLIKE 'a|b'",
            "SELECT id FROM customers WHERE name REGEXP 'a|b'",
        ),
        (
            "SELECT id FROM customers WHERE name NOT REGEXP 'x'",
            "SELECT id FROM customers WHERE NOT name REGEXP 'x'",
        ),
        (
            "SELECT MEDIAN(price) OVER (PARTITION BY category) AS m FROM products",
            "SELECT MEDIAN(price) OVER (PARTITION BY category) AS m FROM products",
        ),
        (
            "SELECT TIMESTAMPADD(HOUR, 36, ordered_at) AS t FROM orders",
            "SELECT TIMESTAMPADD(HOUR, 36, ordered_at) AS t FROM orders",
        ),
        (
            "SELECT CHR(65) AS a, CHAR(66, 67) AS b, CHAR(68 USING utf8mb4) AS c",
            "SELECT CHR(65) AS a, CHAR(66, 67) AS b, CHAR(68 USING utf8mb4) AS c",
        ),
        (
            "SELECT TO_CHAR(ordered_at, 'YYYY-MM') AS m FROM orders",
            "SELECT TO_CHAR(ordered_at, 'YYYY-MM') AS m FROM orders",
        ),
    ],
)
def test_mariadb_writes_what_mariadb_has(sql: str, expected: str) -> None:
    assert written(sql) == expected


def test_mysql_still_writes_mysql_8_after_mariadb_was_used() -> None:
    """MariaDB extends a copy of the handler table MySQL's generators share."""
    written("SELECT id FROM customers WHERE name REGEXP 'a'")
    assert "REGEXP_LIKE(name, 'a')" in written(
        "SELECT id FROM customers WHERE name REGEXP 'a'", "mysql"
    )


def test_what_mariadb_cannot_say_is_refused_not_rewritten() -> None:
    with pytest.raises(UnsafeQueryError) as caught:
        written("SELECT id FROM customers WHERE REGEXP_LIKE(name, 'a', 'i')")
    assert caught.value.rule == "parse_error" and "cannot be reproduced" in caught.value.message


def test_guard_dialect_is_the_server_s() -> None:
    class Connected:
        name = "mysql"
        is_mariadb = True

    assert guard_dialect(Connected()) == "mariadb"
    Connected.is_mariadb = False
    assert guard_dialect(Connected()) == "mysql"
    assert guard_dialect(sa.create_engine("sqlite://").dialect) == "sqlite"


def test_the_connector_guards_a_mariadb_server_in_mariadb(mariadb_urls) -> None:
    connector = SQLConnector(
        "shop", mariadb_urls.ro, tables=list(ALLOWED_TABLES), row_limit=50, statement_timeout_s=10
    )
    try:
        assert connector.dialect == "mysql"  # SQLAlchemy knows only after connecting
        assert connector.catalog.tables  # the first read connects
        assert connector.dialect == "mariadb"
        sql = "SELECT id, name FROM customers WHERE name REGEXP '^[A-G]' ORDER BY id"
        result = connector.query(sql)
        assert "name REGEXP '^[A-G]'" in result.executed_sql
        owner = sa.create_engine(mariadb_urls.admin, poolclass=NullPool)
        try:
            with owner.connect() as conn:
                direct = [tuple(row) for row in conn.exec_driver_sql(sql)]
        finally:
            owner.dispose()
        assert [tuple(row) for row in result.df.itertuples(index=False)] == direct
        assert direct  # the pattern matches some of the seeded names
    finally:
        connector.close()
