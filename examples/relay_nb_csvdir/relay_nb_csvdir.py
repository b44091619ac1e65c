"""``csvdir``: a directory of CSV files as read-only SQL tables — a relay_nb connector plugin.

Installed, it is used like a built-in connector::

    relay.connect("files", "csvdir:///srv/exports")          # by URL scheme
    relay.connect("files", "csvdir", path="exports/")        # by type name
    {"type": "csvdir", "id": "files", "config": {"path": "exports/"}}   # relay.config.json

Each ``*.csv`` file becomes a table named after the file (``Sales 2026.csv`` → ``sales_2026``).
The model queries them with the same guarded, read-only DuckDB SQL as notebook DataFrames:
the plugin composes ``relay_nb.DataFrameConnector`` rather than running any SQL itself, so
every safety rule of the built-in applies unchanged. A file is read again only when it changes
(modification time or size); a file added or removed shows up when the schema is refreshed
(``relay.refresh("files")``, or by itself after the session's schema TTL).

Only public relay_nb names are used, and pandas is imported when a connector is built, so
``relay_nb.connector_types()`` loading this plugin stays cheap.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field, field_validator

from relay_nb import ConfigurationError, Connector, ConnectorType, QueryResult, Tool

if TYPE_CHECKING:
    import pandas as pd

    from relay_nb import DataFrameConnector

__all__ = ["CSVDIR", "CSVDirConfig", "CSVDirConnector"]

_NOT_A_NAME = re.compile(r"[^a-z0-9]+")
_MAX_TABLE_NAME = 63


class CSVDirConfig(BaseModel):
    """The options (JSON ``config`` or ``relay.connect`` keywords)."""

    model_config = ConfigDict(extra="forbid")

    path: str
    """The directory; relative paths in a config file are read from the file's directory."""
    pattern: str = "*.csv"
    row_limit: int = Field(default=200, ge=1, le=10_000)
    statement_timeout_s: float = Field(default=30.0, gt=0)

    @field_validator("path")
    @classmethod
    def _a_directory(cls, path: str) -> str:
        directory = Path(path).expanduser()
        if not directory.is_dir():
            raise ValueError(f"no directory at {path!r}")
        return str(directory.resolve())


class CSVDirConnector(Connector):
    """The CSV files of one directory, queried with read-only SQL."""

    kind = "csvdir"

    def __init__(
        self,
        id: str,
        *,
        path: str,
        pattern: str = "*.csv",
        row_limit: int = 200,
        statement_timeout_s: float = 30.0,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        self.id = id
        self.name = name or id
        self.directory = Path(path).expanduser().resolve()
        self.description = description
        self.target = f"csvdir://{self.directory}"
        self.pattern = pattern
        self.row_limit = row_limit
        self.statement_timeout_s = statement_timeout_s
        self._lock = threading.Lock()
        self._files: dict[str, _CSVFile] = {}
        self._inner = self._build()

    # -- what the model sees: the inner DataFrame connector's, described as CSV files --------

    def tools(self) -> list[Tool]:
        tools = self._inner.tools()
        return [
            dataclasses.replace(
                tool,
                description=(
                    f"Run one read-only SQL query (DuckDB dialect) on the CSV files in "
                    f"{self.directory.name}/ ({self.name}), one table per file. Returns at most "
                    f"{self.row_limit} rows: aggregate in SQL rather than fetching raw rows."
                ),
                metadata={**tool.metadata, "kind": self.kind},
            )
            if tool.name == f"query_{self.id}"
            else dataclasses.replace(tool, metadata={**tool.metadata, "kind": self.kind})
            for tool in tools
        ]

    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        files = ", ".join(f"{table} ← {f.path.name}" for table, f in self._files.items())
        head = (
            f"### CSV directory connector: {self.id}"
            + (f" ({self.name})" if self.name != self.id else "")
            + f" — the CSV files in {self.directory}, one read-only table per file "
            + f"(table ← file: {files})\n"
        )
        budget = None if max_tokens is None else max(0, max_tokens - len(head) // 4 - 1)
        inner = self._inner.prompt_context(max_tokens=budget, question=question)
        if inner.startswith("### DataFrame connector"):  # its heading would say "DataFrames"
            inner = inner.split("\n", 1)[1] if "\n" in inner else ""
        return head + inner

    def object_names(self) -> list[str]:
        return self._inner.object_names()

    def query(self, sql: str) -> QueryResult:
        """Run one read-only query directly (the same guard as the model's)."""
        return self._inner.query(sql)

    # -- lifecycle -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Look at the directory again: a file added or removed changes the tables."""
        if set(self._scan()) == set(self._files):
            self._inner.refresh()
            return
        old, self._inner = self._inner, self._build()
        old.close()

    def invalidate(self) -> None:
        """Forget the schema; only a file added or removed is read now (the new table)."""
        if set(self._scan()) == set(self._files):
            self._inner.invalidate()
            return
        old, self._inner = self._inner, self._build()
        old.close()

    def close(self) -> None:
        self._inner.close()

    # -- internals -------------------------------------------------------------------------------

    def _scan(self) -> dict[str, Path]:
        tables: dict[str, Path] = {}
        for file in sorted(self.directory.glob(self.pattern)):
            if not file.is_file():
                continue
            table = table_name(file.stem)
            if table in tables:
                raise ConfigurationError(
                    f"{tables[table].name} and {file.name} would both be table {table!r}; "
                    "rename one of them"
                )
            tables[table] = file
        if not tables:
            raise ConfigurationError(f"no {self.pattern} files in {self.directory}")
        return tables

    def _build(self) -> DataFrameConnector:
        from relay_nb import DataFrameConnector

        with self._lock:
            scanned = self._scan()
            self._files = {
                table: self._files.get(table) or _CSVFile(path) for table, path in scanned.items()
            }
            return DataFrameConnector(
                self.id,
                dict(self._files),
                row_limit=self.row_limit,
                statement_timeout_s=self.statement_timeout_s,
                name=self.name,
                description=self.description,
            )


class _CSVFile:
    """A table's source: the file's DataFrame, read again only when the file changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._frame: pd.DataFrame | None = None
        self._lock = threading.Lock()

    def __call__(self) -> pd.DataFrame:
        import pandas as pd

        with self._lock:
            stat = self.path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            if self._frame is None or stamp != self._stamp:
                self._frame = pd.read_csv(self.path)
                self._stamp = stamp
            return self._frame


def table_name(stem: str) -> str:
    """A file name as a snake_case SQL table name: ``Sales 2026`` → ``sales_2026``."""
    name = _NOT_A_NAME.sub("_", stem.lower()).strip("_") or "file"
    if not name[0].isalpha():
        name = f"t_{name}"
    return name[:_MAX_TABLE_NAME]


def options_from_url(url: str) -> dict[str, Any]:
    """``csvdir:///srv/exports`` → ``{"path": "/srv/exports"}`` (``csvdir://exports``: relative)."""
    return {"path": unquote(url.split("://", 1)[1])}


CSVDIR = ConnectorType(
    name="csvdir",
    factory=CSVDirConnector,
    config_model=CSVDirConfig,
    url_schemes=("csvdir",),
    from_url=options_from_url,
    path_options=("path",),
    description="a directory of CSV files as read-only SQL tables, one per file",
)
"""What the ``relay_nb.connectors`` entry point names (see pyproject.toml)."""
