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
(``relay.refresh("files")``, or by itself in the first prompt after the session's schema
TTL). A file that cannot be read as CSV is named (in the error, or in the prompt) and read
again next time; the tables read before stay queryable meanwhile.

Only public relay_nb names are used, and pandas is imported when a connector is built, so
``relay_nb.connector_types()`` loading this plugin stays cheap.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field, field_validator

from relay_nb import (
    ConfigurationError,
    Connector,
    ConnectorError,
    ConnectorType,
    QueryResult,
    Tool,
)

if TYPE_CHECKING:
    import pandas as pd

    from relay_nb import DataFrameConnector

__all__ = ["CSVDIR", "CSVDirConfig", "CSVDirConnector", "check_pattern", "table_name"]

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

    @field_validator("pattern")
    @classmethod
    def _in_the_directory(cls, pattern: str) -> str:
        return check_pattern(pattern)


class CSVDirConnector(Connector):
    """The CSV files of one directory, queried with read-only SQL.

    The tables live in an inner ``DataFrameConnector``, replaced as a whole when a file is
    added or removed. The tools handed out look the current one up at every call, so a turn
    (or the registry's cached tool list) never holds a closed one.

    Two locks, so reading files never stalls a query: the rebuild lock lets one rebuild run
    at a time (the directory scanned, new files read, the replacement built), and the state
    lock is held only for moments — to swap the replacement in, or to pick the current inner
    connector. A replaced inner connector still running a call is closed when its last call
    returns, not under it. :meth:`invalidate` (the session's schema TTL) only marks the
    directory to be looked at again: the next prompt does it, under the context source's
    timeout, and a problem there (an unreadable file, two files named alike) is shown in the
    prompt while the tables read before stay queryable. After :meth:`close` nothing is
    rebuilt: every use says the connector is closed.
    """

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
        self.pattern = check_pattern(pattern)
        self.row_limit = row_limit
        self.statement_timeout_s = statement_timeout_s
        self._lock = threading.Lock()  # the state below; never held while reading files
        self._rebuild_lock = threading.Lock()  # one scan-read-build at a time
        self._files: dict[str, _CSVFile] = {}
        self._stale = False
        self._closed = False
        self._problem: str | None = None
        self._inner: DataFrameConnector | None = None
        self._inner_tools: dict[str, Tool] = {}
        self._calls: dict[int, int] = {}  # id(inner) -> calls running on it
        self._retired: dict[int, DataFrameConnector] = {}  # replaced, closed after their calls
        self._replace(self._scan())

    # -- what the model sees: the inner DataFrame connector's, described as CSV files --------

    def tools(self) -> list[Tool]:
        with self._lock:
            templates = list(self._inner_tools.values())
        return [
            dataclasses.replace(
                tool,
                description=(
                    f"Run one read-only SQL query (DuckDB dialect) on the CSV files in "
                    f"{self.directory.name}/ ({self.name}), one table per file. Returns at most "
                    f"{self.row_limit} rows: aggregate in SQL rather than fetching raw rows."
                )
                if tool.name == f"query_{self.id}"
                else tool.description,
                handler=self._current_handler(tool.name),
                metadata={**tool.metadata, "kind": self.kind},
            )
            for tool in templates
        ]

    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        self._catch_up()
        with self._using() as (inner, _):
            with self._lock:
                files, problem = dict(self._files), self._problem
            listed = ", ".join(f"{table} ← {f.path.name}" for table, f in files.items())
            head = (
                f"### CSV directory connector: {self.id}"
                + (f" ({self.name})" if self.name != self.id else "")
                + f" — the CSV files in {self.directory}, one read-only table per file "
                + f"(table ← file: {listed})\n"
                + (f"Not queryable now: {problem}\n" if problem else "")
            )
            budget = None if max_tokens is None else max(0, max_tokens - len(head) // 4 - 1)
            inner_text = inner.prompt_context(max_tokens=budget, question=question)
        first, _, rest = inner_text.partition("\n")
        # the inner connector's own heading (whatever its words) would say "DataFrames"
        return head + (rest if first.startswith("#") else inner_text)

    def object_names(self) -> list[str]:
        self._catch_up()
        with self._using() as (inner, _):
            return inner.object_names()

    def query(self, sql: str) -> QueryResult:
        """Run one read-only query directly (the same guard as the model's)."""
        with self._using() as (inner, _):
            return inner.query(sql)

    # -- lifecycle -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Look at the directory again now: a file added or removed changes the tables, a
        changed file is described again. A problem is raised (the tables stay as they were)."""
        with self._rebuild_lock:
            with self._lock:
                self._check_open()
                self._stale = False
            try:
                self._reconcile()
            except Exception:
                with self._lock:
                    self._stale = True  # the next prompt tries again
                raise
        with self._using() as (inner, _):
            inner.refresh()

    def invalidate(self) -> None:
        """Forget the schema: the directory is looked at again by the next prompt (reading
        nothing now — this runs at the start of a turn)."""
        self._stale = True

    def close(self) -> None:
        """Close the tables; a call still running finishes first (its inner connector is
        closed when it returns). Nothing is rebuilt afterwards."""
        with self._lock:
            self._closed = True
            inner, self._inner, self._inner_tools = self._inner, None, {}
            idle = self._retire(inner)
        for connector in idle:
            connector.close()

    # -- internals -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        """Under ``self._lock``: a closed connector says so."""
        if self._closed or self._inner is None:
            raise ConnectorError(
                f"the csvdir connector {self.id!r} is closed; connect the directory again"
            )

    @contextlib.contextmanager
    def _using(self, tool_name: str | None = None) -> Iterator[tuple[DataFrameConnector, Any]]:
        """The current inner connector (and its tool ``tool_name``), counted as in use until
        the block ends: a refresh replacing it meanwhile closes it only afterwards."""
        with self._lock:
            self._check_open()
            inner = self._inner
            assert inner is not None
            tool = self._inner_tools[tool_name] if tool_name is not None else None
            self._calls[id(inner)] = self._calls.get(id(inner), 0) + 1
        try:
            yield inner, tool
        finally:
            with self._lock:
                left = self._calls.pop(id(inner)) - 1
                if left:
                    self._calls[id(inner)] = left
                done = self._retired.pop(id(inner), None) if not left else None
            if done is not None:
                done.close()

    def _retire(self, inner: DataFrameConnector | None) -> list[DataFrameConnector]:
        """Under ``self._lock``: a replaced inner connector, to close now (returned, for the
        caller to close outside the lock) or when its last running call returns."""
        if inner is None:
            return []
        if self._calls.get(id(inner)):
            self._retired[id(inner)] = inner
            return []
        return [inner]

    def _current_handler(self, tool_name: str) -> Any:
        async def handler(arguments: Any) -> Any:
            with self._using(tool_name) as (_, tool):
                return await tool.handler(arguments)

        return handler

    def _catch_up(self) -> None:
        """After :meth:`invalidate`: look at the directory; a problem is kept for the prompt
        (the tables read before stay), and tried again next time."""
        with self._lock:
            self._check_open()
            if not self._stale:
                return
        with self._rebuild_lock:
            with self._lock:
                self._check_open()
                if not self._stale:  # another thread looked meanwhile
                    return
                self._stale = False
            try:
                self._reconcile()
            except ConfigurationError as exc:
                with self._lock:
                    self._problem, self._stale = str(exc), True
                return
            except Exception:
                with self._lock:
                    self._stale = True
                raise

    def _reconcile(self) -> None:
        """Under the rebuild lock: scan, and replace the tables if the files changed."""
        scanned = self._scan()
        with self._lock:
            current = {t: f.path for t, f in self._files.items()}
        if current != scanned:
            self._replace(scanned)
        with self._lock:
            self._problem = None

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

    def _replace(self, scanned: dict[str, Path]) -> None:
        """Build the inner connector for ``scanned`` (reading new files, outside the state
        lock), then swap it in; nothing changes when a file cannot be read (it is named, and
        tried again next time), or when the connector was closed meanwhile."""
        from relay_nb import DataFrameConnector

        with self._lock:
            known = {f.path: f for f in self._files.values()}
        files = {table: known.get(path) or _CSVFile(path) for table, path in scanned.items()}
        for file in files.values():
            file.check()
        inner = DataFrameConnector(
            self.id,
            dict(files),
            row_limit=self.row_limit,
            statement_timeout_s=self.statement_timeout_s,
            name=self.name,
            description=self.description,
        )
        tools = {tool.name: tool for tool in inner.tools()}
        with self._lock:
            closed = self._closed
            if not closed:
                old, self._inner, self._files = self._inner, inner, files
                self._inner_tools = tools
                idle = self._retire(old)
        if closed:
            inner.close()
            raise ConnectorError(
                f"the csvdir connector {self.id!r} is closed; connect the directory again"
            )
        for connector in idle:
            connector.close()


class _CSVFile:
    """A table's source: the file's DataFrame, read again only when the file changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._frame: pd.DataFrame | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
        """Read the file now; one that is no CSV is named with the reason."""
        try:
            self()
        except Exception as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise ConfigurationError(
                f"{self.path.name} could not be read as CSV ({type(exc).__name__}"
                + (f": {reason[:200]}" if reason else "")
                + "); fix or remove it"
            ) from None

    def __call__(self) -> pd.DataFrame:
        import pandas as pd

        with self._lock:
            stat = self.path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            if self._frame is None or stamp != self._stamp:
                self._frame = pd.read_csv(self.path)
                self._stamp = stamp
            return self._frame


def check_pattern(pattern: str) -> str:
    """A file-name pattern inside the directory (``*.csv``, ``sales_*.csv``): no path."""
    if not pattern or any(part in pattern for part in ("/", "\\", "..")):
        raise ValueError(
            f"pattern {pattern!r} must match file names in the directory (e.g. '*.csv'), "
            "without '/', '\\' or '..'; point path at another directory instead"
        )
    return pattern


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
