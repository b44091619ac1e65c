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
import hashlib
import io
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from relay_nb.errors import ConfigurationError
from relay_nb.eval.compare import ColumnPolicy

__all__ = ["BankQuestion", "QuestionBank", "load_bank"]

_MAX_PROBLEMS = 12
_ID = re.compile(r"^[\w.:-]{1,80}$")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ALIASES = {"query": "sql", "SQL": "sql", "db_id": "connector", "question_id": "id"}
"""The public benchmarks' names for a question's keys (Spider, BIRD)."""
_BENCHMARK_ONLY = ("query_toks", "query_toks_no_value", "question_toks")
_QUESTION_KEYS = (
    "id, question, connector, sql, rows, columns, csv, order_matters, column_policy, "
    "rel_tol, abs_tol, tags, notes"
)


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

    @field_validator("rows", mode="before")
    @classmethod
    def _row_lists(cls, value: Any) -> Any:
        """Rows as lists; a list of mappings becomes lists in its first row's key order."""
        if isinstance(value, list) and value and all(isinstance(r, Mapping) for r in value):
            keys = list(value[0])
            return [[row.get(k) for k in keys] for row in value]
        return value

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
    """Targets to connect when the caller has not (the CLI): ``{id: URL or "demo"}``."""
    path: str = ""

    @property
    def digest(self) -> str:
        """A hash of the questions and their expected results: two runs of the same digest
        measured the same thing (a regression diff says so when they differ)."""
        data = [q.model_dump(mode="json", exclude={"line"}) for q in self.questions]
        text = json.dumps(data, sort_keys=True, default=str)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]

    def resolve_csv(self, question: BankQuestion) -> Path:
        """The CSV file of ``question``'s expected rows (relative to the bank's folder)."""
        if question.csv is None:
            raise ConfigurationError(f"question {question.id!r} has no csv")
        base = Path(self.path).parent if self.path else Path.cwd()
        return (base / question.csv).expanduser()

    def tags(self) -> list[str]:
        return sorted({tag for q in self.questions for tag in q.tags})


def load_bank(source: str | os.PathLike[str] | QuestionBank) -> QuestionBank:
    """Read and validate a bank file (``.yaml``/``.yml``, ``.jsonl``, ``.csv``); raises one
    :class:`~relay_nb.errors.ConfigurationError` listing every problem with its line."""
    if isinstance(source, QuestionBank):
        return source
    path = Path(source).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
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
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
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
            entries.append((number, json.loads(raw)))
        except json.JSONDecodeError as exc:
            problems.append(f"{where}:{number}: not valid JSON ({exc.msg})")
    _raise(problems)
    return entries


def _json_entries(text: str, where: str) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    """A JSON array of questions (Spider's and BIRD's files), or an object like a YAML bank.
    Each question's line is where its object starts."""
    try:
        data = json.loads(text)
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
    for row in reader:
        entry = {k: v for k, v in row.items() if k is not None and v not in (None, "")}
        if None in row:
            entry["__extra__"] = row[None]
        if "order_matters" in entry:
            entry["order_matters"] = entry["order_matters"].strip().lower() in ("true", "1", "yes")
        entries.append((reader.line_num, entry))
    return entries


# -- validation ---------------------------------------------------------------------------------


def _build(header: dict[str, Any], entries: list[tuple[int, Any]], path: Path) -> QuestionBank:
    where = path.name
    problems: list[str] = []
    known_header = {"name", "description", "connector", "connectors", "defaults"}
    for key in sorted(set(header) - known_header):
        problems.append(f"{where}:1: unknown key {key!r}; a bank has {', '.join(known_header)}")
    defaults = header.get("defaults") or {}
    if not isinstance(defaults, dict):
        problems.append(f"{where}: defaults must be a mapping of question keys")
        defaults = {}
    connectors = header.get("connectors") or {}
    if not isinstance(connectors, dict) or not all(isinstance(v, str) for v in connectors.values()):
        problems.append(f"{where}: connectors must map each id to a URL (or demo)")
        connectors = {}
    default_connector = header.get("connector") or defaults.get("connector")
    if default_connector is None and len(connectors) == 1:
        default_connector = next(iter(connectors))
    questions: list[BankQuestion] = []
    seen: dict[str, int] = {}
    for position, (line, entry) in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            problems.append(f"{where}:{line}: question {position} is not a mapping")
            continue
        merged = {**defaults, **_from_benchmark(entry)}
        if "connector" not in merged and default_connector is not None:
            merged["connector"] = default_connector
        name = str(merged.get("id") or merged.get("question") or f"#{position}")[:60]
        label = f"{where}:{line}: question {name!r}"
        problem = _entry_problem(merged, connectors)
        if problem is None:
            merged.setdefault("id", merged.get("question"))
            try:
                question = BankQuestion.model_validate({**merged, "line": line})
            except ValidationError as exc:
                problem = _pydantic_problem(exc)
            else:
                if question.id in seen:
                    problem = f"the id is used at line {seen[question.id]} too; ids are unique"
                else:
                    seen[question.id] = line
                    questions.append(question)
        if problem is not None:
            problems.append(f"{label}: {problem}")
    if not entries:
        problems.append(f"{where}: the bank has no questions")
    _raise(problems)
    name = str(header.get("name") or path.stem)
    expanded = {k: _expand_env(v, where) for k, v in connectors.items()}
    return QuestionBank(
        name=name,
        description=str(header.get("description") or ""),
        questions=tuple(questions),
        connectors=expanded,
        path=str(path),
    )


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


def _entry_problem(entry: dict[str, Any], connectors: Mapping[str, str]) -> str | None:
    if "__extra__" in entry:
        return "the row has more cells than the header has columns"
    given = [key for key in ("sql", "rows", "csv") if entry.get(key) not in (None, "")]
    if not entry.get("question"):
        return "question is missing; write the question as an analyst would ask it"
    if not given:
        return "give the expected result: sql (gold SQL), rows (inline) or csv (a file)"
    if len(given) > 1:
        return f"give one expected result, not {' and '.join(given)}"
    if not entry.get("connector"):
        return "connector is missing; name it here or as the bank's connector:"
    if connectors and entry["connector"] not in connectors:
        return (
            f"connector {entry['connector']!r} is not among the bank's connectors "
            f"({', '.join(sorted(connectors))})"
        )
    if entry.get("id") is not None and not _ID.match(str(entry["id"])):
        return "id must be 1-80 letters, digits, '_', '-', '.' or ':'"
    return None


def _pydantic_problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden":
        return f"unknown key {loc!r}; a question has {_QUESTION_KEYS}"
    return f"{loc}: {first['msg']}"


def _expand_env(target: str, where: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        found = os.environ.get(name)
        if found is None:
            raise ConfigurationError(f"{where}: connectors name ${{{name}}}, which is not set")
        return found

    return _ENV.sub(value, target)


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
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
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
