"""Prompted structured output: a tool's input asked for in the prompt, read from the text.

For a model or CLI with no way to enforce a schema (OpenCode; an OpenAI-compatible server
without function calling), a forced tool is answered by *asking* for its input as a JSON
object. This module holds what every such runtime does the same way: the instruction text
(:func:`prompted_instructions`), finding the JSON object in the answer, bare, fenced or
wrapped in prose (:func:`json_object`), and an optional content-free check of it against the
tool's schema (:func:`schema_problem`). No SDK import: it is pure text and JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from relay_nb.runtime.types import ToolSpec

__all__ = ["json_object", "prompted_instructions", "schema_problem"]


def prompted_instructions(tool: ToolSpec) -> str:
    """What the model is asked for: the tool's input as a bare JSON object, with its schema."""
    schema = json.dumps(tool.input_schema, separators=(",", ":"), ensure_ascii=False)
    lines = [
        f'Reply with only a JSON object (no prose, no code fence): the input of the tool "'
        f'{tool.name}".'
    ]
    if tool.description.strip():
        lines.append(f"Tool description: {tool.description.strip()}")
    lines.append(f"The JSON object must match this JSON schema: {schema}")
    return "\n".join(lines)


_FENCE = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.DOTALL | re.IGNORECASE)


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a prompted answer holds: the whole text, a fenced block, or the first
    object in it (small models like to wrap JSON in prose); None if there is none."""
    stripped = text.strip()
    candidates = [stripped]
    fenced = _FENCE.search(stripped)
    if fenced:
        candidates.append(fenced.group(1))
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    start = stripped.find("{")
    if start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(stripped[start:])
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None
    return None


_MAX_DEPTH = 32
_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: _is_integer(v),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


def _is_integer(value: Any) -> bool:
    """JSON Schema's integer: 3 and 3.0, never True, inf or nan."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def schema_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    """The first way ``value`` breaks ``schema``, or None if it fits.

    Checks ``type``, ``enum``, ``const``, ``properties``/``required``/``additionalProperties``,
    ``items``, ``minItems``/``maxItems``, ``minLength``/``maxLength``, the numeric bounds,
    ``anyOf``/``oneOf``/``allOf`` and local ``$ref``s; other keywords are not checked. The
    answer is content-free: a path of schema-declared names and the rule, never a value.
    """
    return _problem(value, schema, schema, "", 0)


def _problem(value: Any, node: Any, root: Mapping[str, Any], path: str, depth: int) -> str | None:
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        return None
    where = path or "the top level"
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _local_ref(ref, root)
        if target is not None:
            problem = _problem(value, target, root, path, depth + 1)
            if problem is not None:
                return problem
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    if kinds and not any(_TYPES.get(k, lambda v: True)(value) for k in kinds):
        return f"at {where}: expected {' or '.join(str(k) for k in kinds)}"
    if "enum" in node and isinstance(node["enum"], list) and value not in node["enum"]:
        return f"at {where}: not one of the allowed values"
    if "const" in node and value != node["const"]:
        return f"at {where}: not the required constant"
    for keyword, problem in _combinator_problems(value, node, root, path, depth):
        if problem is not None:
            return f"at {where}: {keyword} not satisfied" if keyword else problem
    if isinstance(value, dict):
        return _object_problem(value, node, root, path, depth)
    if isinstance(value, list):
        return _array_problem(value, node, root, path, depth)
    if isinstance(value, str):
        if isinstance(node.get("minLength"), int) and len(value) < node["minLength"]:
            return f"at {where}: shorter than minLength"
        if isinstance(node.get("maxLength"), int) and len(value) > node["maxLength"]:
            return f"at {where}: longer than maxLength"
    if isinstance(value, int | float) and not isinstance(value, bool):
        for keyword, broken in (
            ("minimum", lambda b: value < b),
            ("maximum", lambda b: value > b),
            ("exclusiveMinimum", lambda b: value <= b),
            ("exclusiveMaximum", lambda b: value >= b),
        ):
            bound = node.get(keyword)
            if isinstance(bound, int | float) and not isinstance(bound, bool) and broken(bound):
                return f"at {where}: outside {keyword}"
    return None


def _local_ref(ref: str, root: Mapping[str, Any]) -> Any:
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            defs = root.get(prefix[2:-1])
            return defs.get(ref[len(prefix) :]) if isinstance(defs, dict) else None
    return root if ref == "#" else None


def _combinator_problems(
    value: Any, node: Mapping[str, Any], root: Mapping[str, Any], path: str, depth: int
) -> list[tuple[str, str | None]]:
    """(keyword, problem) pairs; keyword "" carries a nested problem through unchanged."""
    found: list[tuple[str, str | None]] = []
    if isinstance(node.get("allOf"), list):
        for branch in node["allOf"]:
            found.append(("", _problem(value, branch, root, path, depth + 1)))
    for keyword in ("anyOf", "oneOf"):
        branches = node.get(keyword)
        if isinstance(branches, list) and branches:
            fits = sum(_problem(value, b, root, path, depth + 1) is None for b in branches)
            ok = fits >= 1 if keyword == "anyOf" else fits == 1
            found.append((keyword, None if ok else "broken"))
    return found


def _object_problem(
    value: dict[str, Any], node: Mapping[str, Any], root: Mapping[str, Any], path: str, depth: int
) -> str | None:
    properties = node.get("properties")
    if not isinstance(properties, dict):
        properties = {}
    for name in node.get("required") or []:
        if isinstance(name, str) and name not in value:
            return f"at {_join(path, name)}: required property missing"
    extra = node.get("additionalProperties")
    for key, item in value.items():
        if key in properties:
            problem = _problem(item, properties[key], root, _join(path, key), depth + 1)
        elif extra is False:
            return f"at {path or 'the top level'}: a property the schema does not declare"
        else:
            problem = _problem(item, extra, root, f"{path}.*" if path else "*", depth + 1)
        if problem is not None:
            return problem
    return None


def _array_problem(
    value: list[Any], node: Mapping[str, Any], root: Mapping[str, Any], path: str, depth: int
) -> str | None:
    where = path or "the top level"
    if isinstance(node.get("minItems"), int) and len(value) < node["minItems"]:
        return f"at {where}: fewer than minItems"
    if isinstance(node.get("maxItems"), int) and len(value) > node["maxItems"]:
        return f"at {where}: more than maxItems"
    items = node.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            problem = _problem(item, items, root, f"{path}[{index}]", depth + 1)
            if problem is not None:
                return problem
    return None


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
