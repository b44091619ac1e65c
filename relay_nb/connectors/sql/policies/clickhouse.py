"""ClickHouse: plain reads only until the warehouse corpus gives it a full policy.

``url()``, ``file()``, ``s3()``, ``remote()`` and their kin are refused by the shared file
rules; a ``SETTINGS`` clause (which can lift the statement's limits) by the shared structural
rules; ``INTO OUTFILE`` as ``SELECT … INTO``.
"""

from __future__ import annotations

from relay_nb.connectors.sql.policies.base import PlainReadPolicy

__all__ = ["ClickHousePolicy"]


class ClickHousePolicy(PlainReadPolicy):
    name = "clickhouse"
    dialects = ("clickhouse",)
