"""MySQL, MariaDB and the engines that answer to their SQL (SingleStore, Doris, StarRocks).

MariaDB is a dialect of its own for writing (relay_nb/sql/dialects.py: no
``REGEXP_LIKE``, its own ``MEDIAN``, ``TIMESTAMPADD``, ``CHR``, ``TO_CHAR``), the same family
for the guard's rules.

Their own: ``JSON_TABLE`` in ``FROM``, ``DUAL`` as the table that is none. Executable comments
(``/*! … */``) and ``INTO OUTFILE`` are refused for every family, since a tokenizer of another
dialect would not see them as code.
"""

from __future__ import annotations

from relay_nb.sql.guard import rules as shared
from relay_nb.sql.guard.policies.base import GuardPolicy

__all__ = ["MySQLPolicy"]


class MySQLPolicy(GuardPolicy):
    name = "mysql"
    dialects = ("mysql", "mariadb", "singlestore", "doris", "starrocks")
    table_functions = shared.COMMON_TABLE_FUNCTIONS | frozenset({"json_table"})
    pseudo_tables = frozenset({"dual"})
