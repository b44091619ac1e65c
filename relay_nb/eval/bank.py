"""A question bank: the analyst's own questions with the results they should get.

A bank is a YAML, JSON, JSONL or CSV file. Each question has its text, the connector it asks, and
the expected result — gold SQL run on that connector (``sql``), rows written inline
(``rows``, with optional ``columns``), or a CSV file of the rows (``csv``, relative to the
bank) — plus optional ``order_matters`` (default: the gold SQL has an outermost ORDER BY),
``column_policy`` (see :mod:`relay_nb.eval.compare`), ``rel_tol``/``abs_tol``, ``tags`` and
``notes``. A YAML bank may also name its ``connectors`` (``{id: URL}``, ``${VAR}`` read from
the environment; ``demo`` builds the sample shop), a default ``connector`` and ``defaults``
for every question::

    name: shop
    connectors: {shop: demo}
    connector: shop
    questions:
      - id: paid-orders
        question: How many orders were paid?
        sql: SELECT COUNT(*) FROM orders WHERE status = 'paid'
        tags: [aggregate, filter]

The public text-to-SQL benchmarks' files load as they are: Spider's ``query`` and ``db_id``
and BIRD's ``SQL``, ``question_id``, ``difficulty`` (a tag) and ``evidence`` (kept as notes)
are read as ``sql``, ``connector``, ``id``, tags and notes, and their token lists and parsed
SQL are ignored; connect each ``db_id`` under its own name.

Every problem is reported at once, each on a line of its own with the file and line number
(``questions.yaml:12: question 'paid-orders': …``), so one edit fixes a bank.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import os
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from relay_nb.errors import ConfigurationError
from relay_nb.eval.compare import ColumnPolicy
from relay_nb.untrusted import BANK, load_json, load_yaml, read_text

__all__ = ["BankQuestion", "QuestionBank", "load_bank"]

_MAX_PROBLEMS = 12
_ID = re.compile(r"^[\w.:-]{1,80}$")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ALIASES = {"query": "sql", "SQL": "sql", "db_id": "connector", "question_id": "id"}
"""The public benchmarks' names for a question's keys (Spider, BIRD)."""
_BENCHMARK_ONLY = ("query_toks", "query_toks_no_value", "question_toks")
_QUESTION_KEYS = (
    "id",
    "question",
    "connector",
    "sql",
    "rows",
    "columns",
    "csv",
    "order_matters",
    "column_policy",
    "rel_tol",
    "abs_tol",
    "tags",
    "notes",
)
_HEADER_KEYS = ("name", "description", "connector", "connectors", "defaults")


class BankQuestion(BaseModel):
    """One question and how to tell a right answer (exactly one of ``sql``, ``rows``,
    ``csv``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    question: str = Field(min_length=1)
    connector: str = Field(min_length=1)
    sql: str | None = None
    rows: list[list[Any]] | None = None
    columns: list[str] | None = None
    csv: str | None = None
    order_matters: bool | None = None
    """None: the gold SQL decides (an outermost ORDER BY); False for expected rows."""
    column_policy: ColumnPolicy = "superset"
    rel_tol: float = Field(default=1e-6, ge=0)
    abs_tol: float = Field(default=1e-9, ge=0)
    tags: tuple[str, ...] = ()
    notes: str = ""
    line: int = 0
    """Where the question starts in its file (1-based; 0 when built in code)."""

    @field_validator("question", "sql")
    @classmethod
    def _stripped(cls, value: str | None) -> str | None:
        return value.strip() if isinstance(value, str) else value

    @field_validator("tags", mode="before")
    @classmethod
    def _tag_list(cls, value: Any) -> Any:
        if isinstance(value, str):  # "filter, aggregate" (CSV) or one tag
            return tuple(t.strip() for t in re.split(r"[;,]", value) if t.strip())
        return value

    @model_validator(mode="before")
    @classmethod
    def _row_lists(cls, data: Any) -> Any:
        """Rows given as mappings become lists, in ``columns``' order (else the first row's
        keys, which then name the columns)."""
        rows = data.get("rows") if isinstance(data, dict) else None
        if isinstance(rows, list) and rows and all(isinstance(r, Mapping) for r in rows):
            keys = list(data.get("columns") or rows[0])
            return {**data, "columns": keys, "rows": [[row.get(k) for k in keys] for row in rows]}
        return data

    @model_validator(mode="after")
    def _rows_fit(self) -> BankQuestion:
        if self.rows is None:
            return self
        widths = {len(row) for row in self.rows}
        if self.columns is not None:
            widths.add(len(self.columns))
        if len(widths) > 1:
            raise ValueError(
                "every row needs as many cells as the others (and as columns names): got "
                + ", ".join(str(w) for w in sorted(widths))
            )
        return self

    def expected_kind(self) -> str:
        """``"sql"``, ``"rows"`` or ``"csv"``."""
        return "sql" if self.sql else "rows" if self.rows is not None else "csv"


class QuestionBank(BaseModel):
    """A loaded, validated bank (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    name: str
    questions: tuple[BankQuestion, ...]
    description: str = ""
    connectors: dict[str, str] = Field(default_factory=dict)
    """Targets to connect when the caller has not (the CLI): ``{id: URL or "demo"}``, as
    written (``${VAR}`` is read when connecting: :meth:`target`)."""
    path: str = ""

    def target(self, connector_id: str, *, allowed_env: Collection[str] = ()) -> str:
        """The bank's target for ``connector_id``, with ``${VAR}`` read from the environment
        and a relative SQLite or DuckDB file taken from the bank's folder.

        A bank comes from a repository or a colleague: a URL it wrote could send a variable's
        value (a token) to a host of its choosing. So only the variables the analyst names in
        ``allowed_env`` (``relay-nb eval --allow-env NAME``) are read; any other is refused
        before anything connects."""
        target = _ENV.sub(
            lambda m: _variable(m.group(1), connector_id, allowed_env),
            self.connectors[connector_id],
        )
        match = re.match(r"^(sqlite|duckdb)(\+\w+)?:///(?!/)(.+)$", target)
        if match and self.path and match.group(3) != ":memory:":
            folder = Path(self.path).parent
            return (
                f"{match.group(1)}{match.group(2) or ''}:///{(folder / match.group(3)).absolute()}"
            )
        return target

    @property
    def digest(self) -> str:
        """A hash of the questions and their expected results: two runs of the same digest
        measured the same thing (a regression diff says so when they differ)."""
        data = [q.model_dump(mode="json", exclude={"line"}) for q in self.questions]
        digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode())
        for question in self.questions:  # an edited CSV of expected rows changes the bank
            if question.csv is not None:
                try:
                    digest.update(self.resolve_csv(question).read_bytes())
                except OSError:
                    digest.update(b"(unreadable)")
        return "sha256:" + digest.hexdigest()[:16]

    def resolve_csv(self, question: BankQuestion) -> Path:
        """The CSV file of ``question``'s expected rows, in the bank's folder (see
        :func:`inside_folder`: never outside it)."""
        if question.csv is None:
            raise ConfigurationError(f"question {question.id!r} has no csv")
        base = Path(self.path).resolve().parent if self.path else Path.cwd()
        return inside_folder(base, question.csv)

    def tags(self) -> list[str]:
        return sorted({tag for q in self.questions for tag in q.tags})


def load_bank(source: str | os.PathLike[str] | QuestionBank) -> QuestionBank:
    """Read and validate a bank file (``.yaml``/``.yml``, ``.json``, ``.jsonl``, ``.csv``); one
    :class:`~relay_nb.errors.ConfigurationError` lists every problem with its line."""
    if isinstance(source, QuestionBank):
        return source
    path = Path(source).expanduser()
    try:
        text = read_text(path, BANK)
    except FileNotFoundError:
        raise ConfigurationError(f"question bank {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read question bank {str(path)!r}: {exc}") from None
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        header, entries = _yaml_entries(text, path.name)
    elif suffix in (".jsonl", ".ndjson"):
        header, entries = {}, _jsonl_entries(text, path.name)
    elif suffix == ".json":
        header, entries = _json_entries(text, path.name)
    elif suffix == ".csv":
        header, entries = {}, _csv_entries(text, path.name)
    else:
        raise ConfigurationError(
            f"question bank {path.name!r}: use a .yaml, .json, .jsonl or .csv file (got {suffix!r})"
        )
    return _build(header, entries, path)


# -- reading each format into (line, mapping) entries --------------------------------------------


def _yaml_entries(text: str, where: str) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    try:
        data, root = load_yaml(text, where=where, bounds=BANK)  # bounded before it is built
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigurationError(f"{where}{line}: {problem}") from None
    if data is None:
        raise ConfigurationError(f"{where}: the bank is empty; add a questions: list")
    if isinstance(data, list):
        header, questions, node = {}, data, root
    elif isinstance(data, dict):
        header = {k: v for k, v in data.items() if k != "questions"}
        header["__lines__"] = {k.value: k.start_mark.line + 1 for k, _ in root.value}
        questions = data.get("questions")
        node = next((v for k, v in root.value if k.value == "questions"), None)
        if not isinstance(questions, list) or node is None:
            raise ConfigurationError(f"{where}:1: the bank needs a questions: list")
    else:
        raise ConfigurationError(f"{where}:1: a bank is a mapping with questions: or a list")
    lines = [item.start_mark.line + 1 for item in node.value]
    return header, list(zip(lines, questions, strict=True))


def _jsonl_entries(text: str, where: str) -> list[tuple[int, Any]]:
    entries = []
    problems = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            entries.append((number, load_json(raw, where=f"{where}:{number}", bounds=BANK)))
        except json.JSONDecodeError as exc:
            problems.append(f"{where}:{number}: not valid JSON ({exc.msg})")
    _raise(problems)
    return entries


def _json_entries(text: str, where: str) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    """A JSON array of questions (Spider's and BIRD's files), or an object like a YAML bank.
    Each question's line is where its object starts."""
    try:
        data = load_json(text, where=where, bounds=BANK)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{where}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    header: dict[str, Any] = {}
    if isinstance(data, dict):
        header = {k: v for k, v in data.items() if k != "questions"}
        data = data.get("questions")
    if not isinstance(data, list):
        raise ConfigurationError(f"{where}:1: a bank is a JSON list of questions")
    lines = _object_lines(text)
    if len(lines) != len(data):
        lines = [0] * len(data)
    return header, list(zip(lines, data, strict=True))


def _object_lines(text: str) -> list[int]:
    """The line where each question object starts: an object opened directly in the
    top-level list, or in the list under a top-level object (its ``questions``)."""
    lines: list[int] = []
    stack: list[str] = []
    line, in_string, escaped = 1, False, False
    for char in text:
        if char == "\n":
            line += 1
        elif in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            if char == "{" and stack in (["["], ["{", "["]):
                lines.append(line)
            stack.append(char)
        elif char in "]}" and stack:
            stack.pop()
    return lines


def _csv_entries(text: str, where: str) -> list[tuple[int, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "question" not in reader.fieldnames:
        raise ConfigurationError(
            f"{where}:1: the header needs a question column (and sql or csv for the expected "
            "result)"
        )
    entries = []
    start = reader.line_num + 1
    for row in reader:
        entry = {k: v for k, v in row.items() if k is not None and v not in (None, "")}
        if None in row:
            entry["__extra__"] = row[None]
        if "order_matters" in entry:
            entry["order_matters"] = entry["order_matters"].strip().lower() in ("true", "1", "yes")
        entries.append((start, entry))
        start = reader.line_num + 1
    return entries


# -- validation ---------------------------------------------------------------------------------


def _build(header: dict[str, Any], entries: list[tuple[int, Any]], path: Path) -> QuestionBank:
    where = path.name
    problems: list[str] = []
    lines = header.pop("__lines__", {})
    for key in sorted(set(header) - set(_HEADER_KEYS)):
        problems.append(
            f"{where}:{lines.get(key, 1)}: unknown key {key!r}{_did_you_mean(key, _HEADER_KEYS)}"
        )
    defaults = header.get("defaults") or {}
    if not isinstance(defaults, dict):
        problems.append(f"{where}:{lines.get('defaults', 1)}: defaults must map question keys")
        defaults = {}
    connectors = header.get("connectors") or {}
    if not isinstance(connectors, dict) or not all(isinstance(v, str) for v in connectors.values()):
        problems.append(
            f"{where}:{lines.get('connectors', 1)}: connectors must map each id to a URL (or demo)"
        )
        connectors = {}
    default_connector = header.get("connector") or defaults.get("connector")
    if default_connector is None and len(connectors) == 1:
        default_connector = next(iter(connectors))
    merged_entries: list[tuple[int, int, dict[str, Any]]] = []
    for position, (line, entry) in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            problems.append(f"{where}:{line}: question {position} is not a mapping of keys")
            continue
        merged = {**defaults, **_from_benchmark(entry)}
        if "connector" not in merged and default_connector is not None:
            merged["connector"] = default_connector
        merged_entries.append((position, line, merged))
    ids = _default_ids(merged_entries)
    questions: list[BankQuestion] = []
    seen: dict[str, int] = {}
    base = path.resolve().parent  # a linked bank: its own folder
    for position, line, merged in merged_entries:
        name = str(merged.get("id") or merged.get("question") or f"#{position}")[:60]
        found = _entry_problems(merged, connectors, base)
        if not found:
            merged.setdefault("id", ids[position])
            try:
                question = BankQuestion.model_validate({**merged, "line": line})
            except ValidationError as exc:
                found = _pydantic_problems(exc)
            else:
                if question.id in seen:
                    found = [f"the id is used at line {seen[question.id]} too; ids are unique"]
                else:
                    seen[question.id] = line
                    questions.append(question)
        problems += [f"{where}:{line}: question {name!r}: {problem}" for problem in found]
    if not entries:
        problems.append(f"{where}: the bank has no questions")
    _raise(problems)
    return QuestionBank(
        name=str(header.get("name") or path.stem),
        description=str(header.get("description") or ""),
        questions=tuple(questions),
        connectors=dict(connectors),
        path=str(path),
    )


def _default_ids(entries: list[tuple[int, int, dict[str, Any]]]) -> dict[int, str]:
    """A question without an id is named by its text; when two share a text (Spider asks
    the same thing of several databases), by its text and connector, else its position."""
    texts = [str(m.get("question") or "") for _, _, m in entries if "id" not in m]
    ids = {}
    for position, _line, merged in entries:
        text = str(merged.get("question") or "").strip()
        if texts.count(text) == 1:
            ids[position] = text
        else:
            ids[position] = f"{text} @{merged.get('connector')} #{position}"
    return ids


def _from_benchmark(entry: dict[str, Any]) -> dict[str, Any]:
    """A Spider or BIRD question in this bank's keys (see the module docstring)."""
    if not any(key in entry for key in (*_ALIASES, *_BENCHMARK_ONLY, "difficulty", "evidence")):
        return entry
    out = {k: v for k, v in entry.items() if k not in _BENCHMARK_ONLY}
    if isinstance(out.get("sql"), dict):  # Spider's parsed SQL beside its text
        del out["sql"]
    for alias, key in _ALIASES.items():
        if alias in out and key not in out:
            out[key] = out.pop(alias)
    if isinstance(out.get("id"), int):
        out["id"] = str(out["id"])
    difficulty = out.pop("difficulty", None)
    if isinstance(difficulty, str) and difficulty:
        tags = out.get("tags") or []
        out["tags"] = [*([tags] if isinstance(tags, str) else tags), difficulty]
    evidence = out.pop("evidence", None)
    if isinstance(evidence, str) and evidence and "notes" not in out:
        out["notes"] = evidence
    return out


def _entry_problems(entry: dict[str, Any], connectors: Mapping[str, str], base: Path) -> list[str]:
    """Everything wrong with one question that its keys alone can tell, all at once."""
    problems = []
    if "__extra__" in entry:
        problems.append("the row has more cells than the header has columns")
    for key in sorted(k for k in entry if k not in _QUESTION_KEYS and k != "__extra__"):
        problems.append(f"unknown key {key!r}{_did_you_mean(key, _QUESTION_KEYS)}")
    given = [key for key in ("sql", "rows", "csv") if entry.get(key) not in (None, "")]
    if not str(entry.get("question") or "").strip():
        problems.append("question is missing; write the question as an analyst would ask it")
    if not given:
        problems.append("give the expected result: sql (gold SQL), rows (inline) or csv (a file)")
    elif len(given) > 1:
        problems.append(f"give one expected result, not {' and '.join(given)}")
    if not entry.get("connector"):
        problems.append(
            "connector is missing; give the question a connector (or the bank a default connector)"
        )
    elif connectors and entry["connector"] not in connectors:
        problems.append(
            f"connector {entry['connector']!r} is not among the bank's connectors "
            f"({', '.join(sorted(connectors))})"
        )
    if entry.get("id") is not None and not _ID.match(str(entry["id"])):
        problems.append("id must be 1-80 letters, digits, '_', '-', '.' or ':'")
    rows = entry.get("rows")
    if isinstance(rows, list) and rows and not all(isinstance(r, list | Mapping) for r in rows):
        problems.append("rows is a list of rows, each a list of cells: [[paid], [refunded]]")
    if isinstance(entry.get("csv"), str) and entry["csv"]:
        try:
            if not inside_folder(base, entry["csv"]).is_file():
                problems.append(f"csv {entry['csv']!r} does not exist beside the bank ({base})")
        except ConfigurationError as exc:
            problems.append(str(exc))
    return problems


def _pydantic_problems(exc: ValidationError) -> list[str]:
    problems = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        problems.append(f"{loc}: {message}" if loc else message)
    return problems


def _did_you_mean(key: str, known: Sequence[str]) -> str:
    """`` (did you mean 'sql'?)``, else the keys there are."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f"; the keys are {', '.join(known)}"


def _variable(name: str, connector_id: str, allowed: Collection[str]) -> str:
    if name not in allowed:
        raise ConfigurationError(
            f"the bank's connector {connector_id!r} reads ${{{name}}}; a bank's URL reads a "
            f"variable only when you allow it (relay-nb eval --allow-env {name}), or connect "
            f"{connector_id!r} yourself (--connect {connector_id}=URL)"
        )
    found = os.environ.get(name)
    if found is None:
        raise ConfigurationError(
            f"the bank's connector {connector_id!r} reads ${{{name}}}, which is not set; set "
            f"it, or connect {connector_id!r} yourself (relay-nb eval --connect "
            f"{connector_id}=URL)"
        )
    return found


def inside_folder(base: Path, name: str) -> Path:
    """``base / name``, refused unless it stays in ``base`` once links are resolved: a bank
    names its expected rows beside it, never ``../outside.csv``, an absolute path, ``~`` or
    a link that leads out (their contents would reach the report)."""
    folder = base.resolve()
    path = (folder / name).resolve()
    if name.startswith("~") or not path.is_relative_to(folder):
        raise ConfigurationError(
            f"csv {name!r} is outside the bank's folder ({folder}); keep a bank's expected "
            "rows beside it"
        )
    return path


def _raise(problems: Sequence[str]) -> None:
    if not problems:
        return
    shown = list(problems[:_MAX_PROBLEMS])
    if len(problems) > _MAX_PROBLEMS:
        shown.append(f"… and {len(problems) - _MAX_PROBLEMS} more")
    raise ConfigurationError("\n".join(shown))


def read_expected_csv(path: Path) -> tuple[list[str], list[list[Any]]]:
    """A CSV of expected rows: the header names the columns; an empty cell is NULL and a
    cell that reads as a number is that number."""
    try:
        text = read_text(path, BANK)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read expected rows {str(path)!r}: {exc}") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        raise ConfigurationError(f"{path.name}:1: the expected rows need a header line")
    return header, [[_cell(value) for value in row] for row in reader if row]


def _cell(text: str) -> Any:
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
