"""Adding a verified query to a knowledge file, keeping every line the team wrote.

A knowledge file is edited by hand and reviewed in git, so saving a verified query must not
rewrite it: comments, key order and formatting stay; the new entry is inserted at the end of
``verified_queries`` (or the key is added at the end of the file), and the result is
validated before it replaces the file (atomically), so a save can never leave a broken file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from relay_nb.errors import ConfigurationError
from relay_nb.knowledge.load import parse_knowledge, yaml_loader
from relay_nb.knowledge.model import Knowledge, VerifiedQuery
from relay_nb.untrusted import KNOWLEDGE, load_yaml, read_text

__all__ = ["append_verified"]


def append_verified(path: str | os.PathLike[str], query: VerifiedQuery) -> Knowledge:
    """Insert ``query`` into the file's ``verified_queries`` (the file is created if missing)
    and return the file's knowledge as now written. The same question with the same SQL is
    there already: the file is left as it is; with other SQL: a ``ConfigurationError``."""
    import yaml

    path = Path(path).expanduser()
    text = read_text(path, KNOWLEDGE) if path.exists() else ""
    known = parse_knowledge(text, where=path.name)  # a broken file is reported, not extended
    same = [q for q in known.verified_queries if q.question.lower() == query.question.lower()]
    if same and all(_same_sql(q.sql, query.sql) for q in same):
        return known  # verified again (a re-run cell): the file already says so, unchanged
    if same:
        raise ConfigurationError(
            f"{path.name} already has a different verified query for {query.question!r}; "
            "edit it there"
        )
    # bounded like any knowledge file (parse_knowledge above checked the same text)
    root = load_yaml(text, where=path.name, bounds=KNOWLEDGE, loader=yaml_loader())[1]
    entries = _find(root, "verified_queries")
    if entries is None:
        updated = _ending(text) + "verified_queries:\n" + _indent(_entry(query), 2)
    elif isinstance(entries, yaml.SequenceNode) and not entries.flow_style and entries.value:
        last_line_end = _line_end(text, entries.value[-1].end_mark.index)
        column = entries.value[0].start_mark.column - 2  # the "- " before each item
        before = _ending(text[:last_line_end])
        updated = before + _indent(_entry(query), column) + text[last_line_end:]
    elif isinstance(entries, yaml.ScalarNode) and entries.value in ("", "~", "null"):
        key_line_end = _line_end(text, entries.start_mark.index)
        before = _ending(text[:key_line_end])
        updated = before + _indent(_entry(query), 2) + text[key_line_end:]
    else:
        raise ConfigurationError(
            f"{path.name}: verified_queries is written inline; write it as a list of "
            "'- question: …' entries so new ones can be added"
        )
    saved = parse_knowledge(updated, where=path.name)
    _replace(path, updated)
    return saved


def _same_sql(saved: str, new: str) -> bool:
    """The same statement, as far as layout goes (a saved entry may be re-indented)."""
    return " ".join(saved.split()).rstrip(";") == " ".join(new.split()).rstrip(";")


def _find(root: Any, key: str) -> Any:
    import yaml

    if not isinstance(root, yaml.MappingNode):
        return None
    return next((value for k, value in root.value if k.value == key), None)


def _entry(query: VerifiedQuery) -> str:
    """``- question: …`` with the SQL as a literal block, as a person would write it."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> Any:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    data: dict[str, Any] = {"question": query.question, "sql": query.sql.strip() + "\n"}
    if query.verified_by:
        data["verified_by"] = query.verified_by
    if query.verified_at is not None:
        data["verified_at"] = query.verified_at
    return yaml.dump([data], Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)


def _indent(block: str, columns: int) -> str:
    pad = " " * max(columns, 0)
    return "".join(pad + line if line.strip() else line for line in block.splitlines(True))


def _ending(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _line_end(text: str, index: int) -> int:
    """The index just past the end of the line holding ``index`` (a block's last line)."""
    index = min(index, len(text))
    if index > 0 and text[index - 1] == "\n":
        return index  # the node ended with its line (a literal block's newline)
    newline = text.find("\n", index)
    return len(text) if newline < 0 else newline + 1


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to a file beside ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
