"""One table as the analyst reads it (``%relay --describe TABLE``): its columns, types, keys
and what they hold, from the catalog the model sees — so a question can use the words the
data uses without a model call.

:func:`find_table` looks ``TABLE`` or ``CONNECTOR.TABLE`` up among the session's SQL
connectors (a name several hold is ambiguous: it says which to write); :func:`table_frame`
lays the table out as a DataFrame, one row a column. Reads each connector's cached catalog;
never queries a table.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from relay_nb.errors import ConfigurationError, RelayError
from relay_nb.sql.catalog.model import Catalog, ColumnInfo, TableInfo
from relay_nb.sql.prompt.describe import referenced_by
from relay_nb.sql.prompt.lines import display_name, fk_target, single_column_fks

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["find_table", "table_frame", "table_title"]


def find_table(connectors: Mapping[str, Any], name: str) -> tuple[str, Catalog, TableInfo]:
    """The connector id, catalog and table ``name`` names (``CONNECTOR.TABLE`` or a table
    only one connector has); a :class:`ConfigurationError` that says what to write else."""
    catalogs: dict[str, Catalog] = {}
    unread: list[str] = []
    for cid, connector in connectors.items():
        try:
            catalog = getattr(connector, "catalog", None)
        except RelayError as exc:  # its schema cannot be read now: say so if nothing is found
            unread.append(f"{cid} ({' '.join(str(exc).split())[:120]})")
            continue
        if isinstance(catalog, Catalog):  # a SQL or DataFrame one (Mongo's and MCP's differ)
            catalogs[cid] = catalog
    if not catalogs and not unread:
        raise ConfigurationError(
            "no SQL or DataFrame connector is connected: %relay --connect NAME URL first"
        )
    head, _, rest = name.partition(".")
    if rest and head in catalogs and (table := catalogs[head].find(rest)) is not None:
        return head, catalogs[head], table
    found = [(cid, c, t) for cid, c in catalogs.items() if (t := c.find(name)) is not None]
    if len(found) == 1:
        return found[0]
    if found:
        where = ", ".join(f"{cid}.{name}" for cid, _, _ in found)
        raise ConfigurationError(f"{name!r} is in several connectors; write one of {where}")
    known = sorted({t.qualified_name for c in catalogs.values() for t in c.tables})
    close = difflib.get_close_matches(rest if rest and head in catalogs else name, known, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    unreadable = f"; not read: {', '.join(unread)}" if unread else ""
    raise ConfigurationError(
        f"no table named {name!r}{hint} (%relay --connectors lists what is connected)" + unreadable
    )


def table_title(connector_id: str, catalog: Catalog, table: TableInfo) -> str:
    """``shop.orders (table, 5 columns) · referenced by order_items(order_id)``."""
    title = f"{connector_id}.{display_name(catalog, table)} ({table.kind}, "
    title += f"{len(table.columns)} column{'s' if len(table.columns) != 1 else ''})"
    if table.comment:
        title += f" — {' '.join(table.comment.split())[:200]}"
    refs = referenced_by(catalog, table)
    if refs:
        title += f" · referenced by {', '.join(refs[:10])}" + (" …" if len(refs) > 10 else "")
    return title


def table_frame(catalog: Catalog, table: TableInfo) -> pd.DataFrame:
    """One row a column: name, type, nullable, key (primary, or the column it references),
    what it holds (its values when few, else its range; from the catalog's profile), and
    the database's comment."""
    import pandas as pd

    single_fk = single_column_fks(table)
    rows = [
        {
            "column": column.name,
            "type": column.type or "(untyped)",
            "nullable": column.nullable,
            "key": "primary key"
            if column.primary_key
            else (
                f"→ {fk_target(catalog, table, single_fk[column.name])}"
                if column.name in single_fk
                else ""
            ),
            "holds": _holds(column),
            "comment": " ".join((column.comment or "").split())[:200],
        }
        for column in table.columns
    ]
    columns = ["column", "type", "nullable", "key", "holds", "comment"]
    if not any(row["comment"] for row in rows):
        columns.pop()  # no column has one: no empty column
    return pd.DataFrame(rows, columns=columns)


def _holds(column: ColumnInfo) -> str:
    profile = column.profile
    if profile is None:
        return ""
    parts: list[str] = [f"{profile.withheld}: not shown"] if profile.withheld else []
    if profile.values:
        shown = ", ".join(profile.values[:12])
        parts.append(
            shown + (f", … ({len(profile.values)} values)" if len(profile.values) > 12 else "")
        )
    if profile.low is not None and profile.high is not None:
        about = "≈" if profile.from_statistics or profile.sampled_rows else ""
        parts.append(f"{about}{profile.low} … {profile.high}")
    if profile.null_share:
        parts.append(f"{profile.null_share:.0%} null")
    return "; ".join(parts)
