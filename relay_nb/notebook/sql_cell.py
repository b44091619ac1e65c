"""``%%relay_sql CONNECTOR``: the analyst's own SQL, on the same safe path as the model's.

The JupySQL habit — a cell of SQL, its result as a table — for taking over a query a turn
wrote (``%relay --sql`` inserts such a cell) or writing one by hand. The SQL goes through the
connector's ``query()``: the guard of the connector's dialect, the allowlist, a read-only
transaction, the statement timeout, the row, value and byte bounds, Ctrl-C cancelling the
statement. Nothing here can write, however the SQL is written.

The SQL is run as written: no ``{variable}`` is filled in (a value pasted into SQL text is
how injection happens; ask a question with ``%relay`` for that). The line is
``CONNECTOR [--out VAR]``; in the line form the SQL follows on the same line.
"""

from __future__ import annotations

from dataclasses import dataclass

from IPython.core.error import UsageError

from relay_nb.notebook.command import IDENTIFIER, rest_of_line

__all__ = ["SQL_HELP", "SQL_USAGE", "SqlCell", "parse_sql_cell", "sql_cell_text"]

SQL_USAGE = "usage: %%relay_sql CONNECTOR [--out VAR] (the SQL in the cell below the line)"

SQL_HELP = "\n".join(
    [
        "%%relay_sql CONNECTOR runs the cell's SQL on a connected SQL or DataFrame",
        "connector, through the same guard as the model's queries: read-only, the",
        "connector's tables only, bounded in time and rows. The result is the cell's output.",
        "",
        "  --out VAR   also keep the result in the notebook variable VAR",
        "",
        "%relay_sql CONNECTOR SQL runs one line. %relay --sql QUESTION inserts the turn's",
        "last query as such a cell. The SQL runs as written ({name} is not filled in).",
        "",
        "Example:",
        "  %%relay_sql shop --out monthly",
        "  SELECT strftime('%Y-%m', ordered_at) AS month, SUM(total) AS revenue",
        "  FROM orders GROUP BY month ORDER BY month",
    ]
)


@dataclass(frozen=True)
class SqlCell:
    """A parsed ``%%relay_sql`` cell (or ``%relay_sql`` line)."""

    connector: str
    sql: str
    out: str | None = None


def parse_sql_cell(line: str, cell: str | None = None) -> SqlCell:
    """``CONNECTOR [--out VAR]`` then the SQL: the rest of the line, or the cell body."""
    words = line.split()
    if not words or words[0].startswith("--"):
        raise UsageError(f"name the connector first; {SQL_USAGE}")
    connector, index, out = words[0], 1, None
    while index < len(words) and words[index].startswith("--"):
        if words[index] != "--out":
            raise UsageError(f"unknown option {words[index]}; {SQL_USAGE}")
        if index + 1 >= len(words) or not IDENTIFIER.match(words[index + 1]):
            raise UsageError(f"--out takes a variable name; {SQL_USAGE}")
        out, index = words[index + 1], index + 2
    rest = rest_of_line(line, words, index)
    if cell is not None:
        if rest:
            raise UsageError(
                "%%relay_sql takes only the connector and --out on its line; "
                "put the SQL in the cell below"
            )
        rest = cell.strip()
    if not rest:
        raise UsageError(f"no SQL to run; {SQL_USAGE}")
    return SqlCell(connector=connector, sql=rest, out=out)


def sql_cell_text(connector: str, sql: str) -> str:
    """The cell ``%relay --sql`` inserts: runnable as it stands."""
    return f"%%relay_sql {connector}\n{sql.strip()}\n"
