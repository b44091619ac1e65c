"""Reading a knowledge file: YAML (or JSON, which YAML reads too) into :class:`Knowledge`,
and errors that say the line. A dbt ``manifest.json`` or a Cortex Analyst semantic model is
recognised by its content and imported (:mod:`~relay_nb.knowledge.dbt`,
:mod:`~relay_nb.knowledge.cortex`).

A knowledge file is edited by hand, so a mistake must point at itself: the loader keeps the
YAML node tree beside the data, and maps a validation error's location (``tables.orders.
columns.status.values``) back to the line that holds it. Only YAML's safe loader is used:
no tags construct Python objects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from relay_nb.errors import ConfigurationError
from relay_nb.knowledge.cortex import is_cortex_model, knowledge_from_cortex
from relay_nb.knowledge.dbt import is_dbt_manifest, knowledge_from_dbt
from relay_nb.knowledge.model import Knowledge
from relay_nb.untrusted import KNOWLEDGE, MANIFEST, load_json, load_yaml, read_text

__all__ = [
    "KNOWLEDGE_FILENAME",
    "KnowledgeSourceInput",
    "load_knowledge",
    "load_knowledge_with_file",
    "parse_knowledge",
    "yaml_loader",
]

KNOWLEDGE_FILENAME = "relay.knowledge.yaml"


KnowledgeSourceInput = str | os.PathLike[str] | Mapping[str, Any] | Knowledge


def load_knowledge(
    source: KnowledgeSourceInput | Sequence[KnowledgeSourceInput],
) -> Knowledge:
    """A :class:`Knowledge` from a file path, a mapping (e.g. from a cell), itself, or a list
    of those (merged, the first saying it winning). A file may be a knowledge file, a dbt
    ``manifest.json`` or a Cortex Analyst semantic model: each is recognised by its content."""
    return load_knowledge_with_file(source)[0]


def load_knowledge_with_file(
    source: KnowledgeSourceInput | Sequence[KnowledgeSourceInput],
) -> tuple[Knowledge, Path | None]:
    """The knowledge, and the knowledge file verified queries may be appended to: the first
    relay_nb knowledge file among the sources (a dbt manifest or a Cortex model is the
    team's own file, never written to; a mapping has no file)."""
    if isinstance(source, Sequence) and not isinstance(source, str):  # a list of sources
        if not source:
            raise ConfigurationError("no knowledge given: name a file, a mapping or a list")
        loaded = [load_knowledge_with_file(one) for one in source]
        knowledge = loaded[0][0]
        for more, _ in loaded[1:]:
            knowledge = knowledge.merged(more)
        return knowledge, next((file for _, file in loaded if file is not None), None)
    if isinstance(source, Knowledge):
        return source, None
    if isinstance(source, Mapping):
        return _from_data(dict(source), where="the knowledge", node=None)[0], None
    path = Path(source).expanduser()
    manifest = path.suffix.lower() == ".json"  # perhaps a dbt manifest: those are large
    try:
        text = read_text(path, MANIFEST if manifest else KNOWLEDGE)
    except FileNotFoundError:
        raise ConfigurationError(f"knowledge file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read knowledge file {str(path)!r}: {exc}") from None
    if manifest and '"dbt_schema_version"' in text[:2000]:
        try:  # a manifest is large: read as JSON, once, never through the YAML parser
            return knowledge_from_dbt(load_json(text, where=path.name, bounds=MANIFEST)), None
        except ValueError as exc:
            raise ConfigurationError(f"cannot read dbt manifest {path.name!r}: {exc}") from None
    if len(text) > KNOWLEDGE.max_bytes:  # a .json that is no manifest: a knowledge file's bound
        read_text(path, KNOWLEDGE)
    knowledge, imported = _parsed(text, where=path.name)
    return knowledge, None if imported else path


def parse_knowledge(text: str, *, where: str = "knowledge") -> Knowledge:
    """Validate the YAML ``text``; ``where`` names it in errors (``shop.yaml line 12: …``)."""
    return _parsed(text, where=where)[0]


def _parsed(text: str, *, where: str) -> tuple[Knowledge, bool]:
    """The knowledge in ``text``, and whether it was imported (not a knowledge file)."""
    import yaml

    try:  # a SafeLoader subclass: no Python objects; bounded before it is built
        data, node = load_yaml(text, where=where, bounds=KNOWLEDGE, loader=yaml_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "is not valid YAML"
        raise ConfigurationError(f"{where}{line}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"{where}: a knowledge file is a mapping (tables:, metrics:, rules:, …), "
            f"not a {type(data).__name__}"
        )
    return _from_data(data, where=where, node=node)


def _from_data(data: dict[str, Any], *, where: str, node: Any) -> tuple[Knowledge, bool]:
    if is_cortex_model(data):
        return knowledge_from_cortex(data, where=where), True
    if is_dbt_manifest(data):
        return knowledge_from_dbt(data), True
    return _validate(data, where=where, node=node), False


@cache
def yaml_loader() -> type:
    """YAML's safe loader with YAML 1.2 booleans: only ``true``/``false``. Under YAML 1.1
    ``on``, ``off``, ``yes`` and ``no`` are booleans too, so a join's ``on:`` key, or a
    column's values ``[yes, no]``, would silently become ``True``/``False``."""
    import re

    import yaml

    class KnowledgeLoader(yaml.SafeLoader):
        pass

    resolvers = {
        first: [(tag, rx) for tag, rx in pairs if tag != "tag:yaml.org,2002:bool"]
        for first, pairs in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    KnowledgeLoader.yaml_implicit_resolvers = resolvers
    KnowledgeLoader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    return KnowledgeLoader


def _validate(data: dict[str, Any], *, where: str, node: Any) -> Knowledge:
    try:
        return Knowledge.model_validate(_without_nulls(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        location = tuple(first["loc"])
        line = _line_of(node, location)
        place = ".".join(str(part) for part in location) or "the file"
        at = f" line {line}" if line is not None else ""
        raise ConfigurationError(f"{where}{at}: {place}: {_message(first)}") from None


def _without_nulls(value: Any) -> Any:
    """A key written with nothing after it (``verified_queries:``) means "none yet", as a
    person reads it, not an error: keys whose value is null are left out, at any depth."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _message(error: Mapping[str, Any]) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown key (a typo? see the knowledge file's keys in the docs)"
    return str(error["msg"])


def _line_of(node: Any, location: Sequence[Any]) -> int | None:
    """The 1-based line of the node at ``location``, or of the deepest one that exists."""
    import yaml

    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in location:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == str(part):
                    # the entry itself is reported at its key's line
                    child = value if part != location[-1] else key
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            child = node.value[part] if 0 <= part < len(node.value) else None
        if child is None:
            return line
        node = child
        line = node.start_mark.line + 1
    return line
