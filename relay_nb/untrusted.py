"""Files people hand relay_nb are untrusted input: read within bounds, before anything is built.

Knowledge files, question banks, config files, OpenAPI documents, dbt manifests, Cortex
semantic models and model scripts come from repositories and colleagues. Each is read under a
:class:`FileBounds`: its size on disk (checked before it is read, and again while reading),
and for YAML and JSON the depth of its nesting and the number of values it *expands* to. A
YAML alias (``*name``) repeats its anchor's whole value, so a few kilobytes of nested aliases
expand to millions of values (the "billion laughs"): the count here follows aliases without
expanding them — the composed node graph, each node's expanded size computed once — and the
document is built only when it fits. A value that contains itself is refused too.

A bound passed is one :class:`~relay_nb.errors.ConfigurationError` line that names the file,
the bound and where it was passed (``shop.yaml line 3: expands to more than 1,000,000
values …``). YAML syntax errors are the parser's own (``yaml.YAMLError``), for the caller to
word as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relay_nb.errors import ConfigurationError

__all__ = [
    "BANK",
    "CONFIG",
    "KNOWLEDGE",
    "MANIFEST",
    "OPENAPI",
    "SCRIPT",
    "FileBounds",
    "load_json",
    "load_yaml",
    "read_text",
]

_MIB = 2**20


@dataclass(frozen=True)
class FileBounds:
    """What one kind of file may be: bytes on disk, values after alias expansion, depth."""

    what: str
    """The file's kind, as errors name it ("knowledge file")."""
    max_bytes: int
    max_values: int = 1_000_000
    max_depth: int = 64


KNOWLEDGE = FileBounds("knowledge file", 16 * _MIB)
"""Knowledge YAML, Cortex semantic models (a large model is a few hundred KB)."""
BANK = FileBounds("question bank", 16 * _MIB)
CONFIG = FileBounds("config file", 1 * _MIB, max_values=100_000)
OPENAPI = FileBounds("OpenAPI document", 64 * _MIB, max_values=5_000_000)
"""The largest public API descriptions (GitHub's, Stripe's) are 5 to 15 MB of JSON."""
MANIFEST = FileBounds("dbt manifest", 1024 * _MIB, max_values=50_000_000, max_depth=128)
"""A large dbt project's manifest.json is hundreds of MB; it is JSON (no aliases)."""
SCRIPT = FileBounds("model script", 64 * _MIB, max_values=5_000_000)
"""A scripted model's steps or a recorded session to replay."""


def read_text(path: Path, bounds: FileBounds) -> str:
    """The UTF-8 text of ``path``, refused past ``bounds.max_bytes`` (checked before reading,
    and while reading: a file that grows meanwhile is refused too). ``OSError`` and
    ``UnicodeDecodeError`` are the caller's to word."""
    size = path.stat().st_size
    if size > bounds.max_bytes:
        raise _too_large(path, size, bounds)
    with path.open("rb") as file:
        data = file.read(bounds.max_bytes + 1)
    if len(data) > bounds.max_bytes:
        raise _too_large(path, len(data), bounds)
    return data.decode("utf-8")


def _too_large(path: Path, size: int, bounds: FileBounds) -> ConfigurationError:
    return ConfigurationError(
        f"{bounds.what} {path.name!r} is {_mib(size)}, more than the {_mib(bounds.max_bytes)} "
        f"a {bounds.what} may be; is it the right file?"
    )


def _mib(size: int) -> str:
    return f"{size / _MIB:,.1f} MiB" if size >= _MIB else f"{size:,} bytes"


def load_yaml(text: str, *, where: str, bounds: FileBounds, loader: Any = None) -> tuple[Any, Any]:
    """``(data, root node)`` of the YAML ``text`` (``(None, None)`` when empty), built with
    ``loader`` (a ``yaml.SafeLoader`` subclass; the safe loader by default) only after its
    depth and expanded size are checked against ``bounds``. The node (for line numbers)
    is the one the data was built from: the text is parsed once."""
    import yaml

    instance = (loader or yaml.SafeLoader)(text)
    try:
        node = instance.get_single_node()
        if node is None:
            return None, None
        _check_nodes(node, where, bounds)
        return instance.construct_document(node), node
    finally:
        instance.dispose()


def _check_nodes(root: Any, where: str, bounds: FileBounds) -> None:
    """Depth and expanded size of a composed YAML graph, without expanding it: each node's
    expanded size (itself and all it holds, aliases counted as often as they are used) is
    computed once, children first."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the node being counted, and those holding it
    stack: list[tuple[Any, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, counted = stack.pop()
        key = id(node)
        if counted:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(child)] for child in _children(node))
            if size > bounds.max_values:
                raise ConfigurationError(
                    f"{_at(where, node)}: expands to more than {bounds.max_values:,} values "
                    f"(YAML aliases, *name, repeat what &name holds), more than a "
                    f"{bounds.what} may hold"
                )
            sizes[key] = size
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise ConfigurationError(
                f"{_at(where, node)}: a value that contains itself (an alias inside its own anchor)"
            )
        if depth > bounds.max_depth:
            raise ConfigurationError(
                f"{_at(where, node)}: nested more than {bounds.max_depth} levels deep, more "
                f"than a {bounds.what} may be"
            )
        open_nodes.add(key)
        stack.append((node, depth, True))
        stack.extend(
            (child, depth + 1, False) for child in _children(node) if id(child) not in sizes
        )


def _children(node: Any) -> list[Any]:
    value = node.value
    if not isinstance(value, list):  # a scalar
        return []
    if value and isinstance(value[0], tuple):  # a mapping: (key, value) pairs
        return [part for pair in value for part in pair]
    return value


def _at(where: str, node: Any) -> str:
    mark = getattr(node, "start_mark", None)
    return f"{where} line {mark.line + 1}" if mark is not None else where


def load_json(text: str, *, where: str, bounds: FileBounds) -> Any:
    """The JSON ``text``, refused when nested deeper than ``bounds.max_depth`` (JSON has no
    aliases: its size is bounded by its bytes). ``json.JSONDecodeError`` is the caller's."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise ConfigurationError(
            f"{where}: nested too deep to read, more than a {bounds.what} may be"
        ) from None
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > bounds.max_depth:
            raise ConfigurationError(
                f"{where}: nested more than {bounds.max_depth} levels deep, more than a "
                f"{bounds.what} may be"
            )
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
    return data
