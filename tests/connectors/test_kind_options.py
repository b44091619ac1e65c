"""Each built-in kind's options are declared once, on its options model (issue 33).

The model (``keywords_model``, else ``config_model``, in the kind's ``kind.py``) holds every
option with its default and a one-line description. What cannot be made from it is checked
against it here: the connector's constructor (its keyword parameters and their defaults),
the TypedDicts that type ``relay.connect``'s options, ``Relay.connect``'s docstring and
``docs/connectors.md`` — in both, no option is missing and none is named that does not exist.
"""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel

import relay_nb
from relay_nb.connectors.kinds import BUILTIN_TYPES
from relay_nb.connectors.mcp import MCP
from relay_nb.connectors.mcp.kind import MCP_TYPE
from relay_nb.connectors.options import docstring_reference, markdown_reference, option_rows
from relay_nb.connectors.types import COMMON_OPTIONS, ConnectorType

DOCS = Path(__file__).resolve().parents[2] / "docs" / "connectors.md"
KINDS = {ctype.name: ctype for ctype in BUILTIN_TYPES}
NOT_OPTIONS = {
    "check": "relay.connect's own (check_timeout_s too)",
    "replace": "register_connector_type's",
    "mode": "SQLite's URL parameter (mode=ro)",
    "token": "relay_nb.HTTPAuth's inline token",
}
"""Keyword spellings the prose may show that are no connector option."""


def _model(ctype: ConnectorType) -> type[BaseModel]:
    model = ctype.keywords_model or ctype.config_model
    assert model is not None, f"{ctype.name}: no options model"
    return model


def _constructor(ctype: ConnectorType) -> Any:
    """What Python builds the connector with: the factory behind a ``LazyFactory``, or for
    MCP the ``relay_nb.MCP`` descriptor (the config factory takes any keyword)."""
    return MCP if ctype is MCP_TYPE else inspect.unwrap(ctype.factory)


def _targets(ctype: ConnectorType) -> set[str]:
    """The options ``relay.connect``'s target fills (``url``, ``frames``, ``provider``…)."""
    return set(ctype.from_url(None) if ctype.from_url else {"url": None})


def _all_options() -> set[str]:
    return {name for ctype in BUILTIN_TYPES for name in _model(ctype).model_fields}


@pytest.mark.parametrize("ctype", BUILTIN_TYPES, ids=lambda t: t.name)
def test_every_option_has_one_line_saying_what_it_sets(ctype: ConnectorType) -> None:
    for name, info in _model(ctype).model_fields.items():
        assert info.description, f"{ctype.name}.{name} has no description"
        assert "\n" not in info.description and len(info.description) <= 200, name


@pytest.mark.parametrize("ctype", BUILTIN_TYPES, ids=lambda t: t.name)
def test_the_config_options_are_declared_once(ctype: ConnectorType) -> None:
    """The keywords model extends the config model: a config option is not declared again."""
    if ctype.keywords_model is not None and ctype.config_model is not None:
        assert issubclass(ctype.keywords_model, ctype.config_model)
        assert ctype.keywords_model.model_config.get("extra") == "forbid"
    assert (ctype.config_model is not None) == ctype.in_config


@pytest.mark.parametrize("ctype", BUILTIN_TYPES, ids=lambda t: t.name)
def test_the_constructor_takes_the_model_s_options_with_its_defaults(ctype: ConnectorType) -> None:
    model, build = _model(ctype), _constructor(ctype)
    if isinstance(build, type) and issubclass(build, BaseModel):
        assert issubclass(build, model) and set(build.model_fields) == set(model.model_fields)
        return
    parameters = list(inspect.signature(build).parameters.values())[1:]  # after the id
    taken = {p.name: p for p in parameters if p.name not in COMMON_OPTIONS}
    fields = model.model_fields
    assert set(taken) == set(fields), f"{ctype.name}: constructor and model differ"
    for name, parameter in taken.items():
        info = fields[name]
        if parameter.default is inspect.Parameter.empty:
            assert info.is_required(), f"{ctype.name}.{name}: the model gives it a default"
        else:
            default = info.get_default(call_default_factory=True, validated_data={})
            assert default == parameter.default, f"{ctype.name}.{name}: default differs"
    assert {p.name for p in parameters} >= set(COMMON_OPTIONS)


@pytest.mark.parametrize(
    "ctype", [t for t in BUILTIN_TYPES if t.config_model], ids=lambda t: t.name
)
def test_a_config_default_is_never_passed_for_the_connector(ctype: ConnectorType) -> None:
    """``factory_defaults``: the connector receives only what the entry gives, so the
    defaults stated on the model cannot change what it is built with."""
    assert ctype.factory_defaults
    required = {n: "x" for n, info in _model(ctype).model_fields.items() if info.is_required()}
    if ctype is MCP_TYPE:
        required = {"url": "http://127.0.0.1:1/mcp"}
    assert ctype.check_options(required) == required


# -- relay.connect's typed options -------------------------------------------------------------


def _typed_options() -> list[tuple[str, type, ConnectorType]]:
    """``(overload target, TypedDict, kind)`` for each overload typing its options."""
    found = []
    for overload in typing.get_overloads(relay_nb.Relay.connect):
        annotations = overload.__annotations__
        unpacked = re.fullmatch(r"Unpack\[(\w+)\]", str(annotations.get("options", "")))
        if unpacked is None:
            continue
        name = unpacked.group(1)
        kinds = [t for t in BUILTIN_TYPES if name in vars(_kind_module(t))]
        assert len(kinds) == 1, f"{name} is declared in no kind.py (or in several)"
        found.append((annotations["target"], getattr(_kind_module(kinds[0]), name), kinds[0]))
    return found


def _kind_module(ctype: ConnectorType) -> ModuleType:
    path = getattr(ctype.factory, "path", None) or ctype.factory.__module__
    package = path.partition(":")[0].rpartition(".")[0]
    return __import__(f"{package}.kind", fromlist=["_"])


def test_relay_connect_types_the_options_of_the_targets_a_type_checker_tells_apart() -> None:
    typed = {kind.name for _, _, kind in _typed_options()}
    assert typed == {"dataframe", "sql", "spark", "websearch"}


@pytest.mark.parametrize("typed", _typed_options(), ids=lambda t: t[2].name)
def test_each_typed_dict_is_the_constructor_s_keywords(typed: tuple[str, type, Any]) -> None:
    """Same names (the target's left out: it is the positional argument) and the same
    annotations, written alike; their options are the model's (the test above)."""
    _, keywords, ctype = typed
    parameters = inspect.signature(_constructor(ctype)).parameters.values()
    taken = {
        p.name: p.annotation
        for p in parameters
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in _targets(ctype)
    }
    declared = {k: v.__forward_arg__ for k, v in keywords.__annotations__.items()}
    assert declared == taken, f"{keywords.__name__} differs from {ctype.name}'s constructor"
    assert keywords.__total__ is False
    assert set(taken) - set(COMMON_OPTIONS) <= set(_model(ctype).model_fields)


# -- the reference: Relay.connect's docstring and docs/connectors.md ---------------------------


def test_relay_connect_s_docstring_lists_every_option_from_the_models() -> None:
    doc = relay_nb.Relay.connect.__doc__ or ""
    assert doc.endswith(docstring_reference(BUILTIN_TYPES))
    for ctype in BUILTIN_TYPES:
        for row in option_rows(ctype):
            assert f"``{row.name}=" in doc or f"``{row.name} (required)``" in doc, row.name


def test_the_docs_option_tables_are_generated_from_the_models() -> None:
    text = DOCS.read_text(encoding="utf-8")
    start, end = "<!-- connector-options:start -->\n", "\n<!-- connector-options:end -->"
    shown = text[text.index(start) + len(start) : text.index(end)]
    made = markdown_reference(BUILTIN_TYPES)
    assert shown == made, f"docs/connectors.md's option tables are stale; paste:\n{made}"


def _prose(where: str) -> str:
    if where == "docs/connectors.md":
        return DOCS.read_text(encoding="utf-8")
    return relay_nb.Relay.connect.__doc__ or ""


@pytest.mark.parametrize(
    ("where", "pattern"),
    [("docs/connectors.md", r"`(\w+)="), ("Relay.connect's docstring", r"``(\w+)=")],
)
def test_nothing_names_an_option_that_does_not_exist(where: str, pattern: str) -> None:
    """An option written ``name=…`` anywhere in them is one some kind declares."""
    known = _all_options() | set(COMMON_OPTIONS) | set(NOT_OPTIONS) | {"check_timeout_s"}
    named = set(re.findall(pattern, _prose(where)))
    assert named & _all_options(), "the pattern finds nothing: is it stale?"
    assert not sorted(named - known), f"{where} names options no kind has: {named - known}"
