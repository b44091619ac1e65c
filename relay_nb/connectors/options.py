"""Connector options: how a kind declares each one, and the reference rendered from that.

Every option of a built-in kind is declared once, as a field of its kind's pydantic options
model (its ``kind.py``): the name, the connector's real default, a one-line description and
the spellings a config file may also use (``rowLimit``). Two models per kind at most:

- ``config_model`` — what a ``relay.config.json`` entry may set. With ``factory_defaults``
  the connector receives only the options an entry gives, so a default stated here is never
  passed for it: it is the constructor's, written down.
- ``keywords_model`` — every keyword ``relay.connect`` and the connector's constructor take
  besides ``name`` and ``description``: the config model's options (it subclasses it) and
  those only Python can pass (an engine, a ranker, a transport), declared in the same way.

What cannot derive from these models is checked against them by
``tests/connectors/test_kind_options.py``: each constructor's keyword parameters and defaults,
and the ``…Keywords`` TypedDicts that type ``relay.connect``'s options for the targets a type
checker can tell apart. ``Relay.connect``'s docstring and ``docs/connectors.md``'s option
tables are rendered here (:func:`docstring_reference`, :func:`markdown_reference`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import AliasChoices, Field
from pydantic.fields import FieldInfo

from relay_nb.connectors.bounds import DEFAULT_MAX_RESULT_BYTES, DEFAULT_MAX_VALUE_BYTES

if TYPE_CHECKING:
    from relay_nb.connectors.types import ConnectorType

__all__ = [
    "OptionRow",
    "approve_above",
    "approve_above_rows",
    "docstring_reference",
    "markdown_reference",
    "max_result_bytes",
    "max_value_bytes",
    "option",
    "option_rows",
    "price_per_tb",
    "required",
]

_WIDTH = 100
"""Docstring lines, as wide as the code's."""


def option(default: Any, description: str, *spellings: str) -> Any:
    """A field: ``default`` is the connector's own, ``description`` one line saying what the
    option sets; ``spellings`` the names a config file may use (the field's name first, then
    the camelCase ones of earlier config files)."""
    alias = AliasChoices(*spellings) if spellings else None
    return Field(default=default, description=description, validation_alias=alias)


def required(description: str, *spellings: str) -> Any:
    """A field without a default: what the connector is built from (``relay.connect``'s
    target fills it)."""
    alias = AliasChoices(*spellings) if spellings else None
    return Field(description=description, validation_alias=alias)


# -- the options several kinds share ----------------------------------------------------------


def max_value_bytes(*spellings: str) -> Any:
    return option(
        DEFAULT_MAX_VALUE_BYTES,
        "bytes one value may bring into the kernel; a longer one is cut and ends …[clipped]",
        *spellings,
    )


def max_result_bytes(*spellings: str) -> Any:
    return option(
        DEFAULT_MAX_RESULT_BYTES,
        "bytes one result may bring into the kernel; reading stops there and the result says so",
        *spellings,
    )


def approve_above() -> Any:
    return option(
        None,
        'ask the analyst first when a query would scan more: bytes ("10GB", or a number) or '
        'dollars at price_per_tb ("$0.50")',
    )


def approve_above_rows() -> Any:
    return option(None, "ask the analyst first when a query would scan more rows")


def price_per_tb() -> Any:
    return option(None, "dollars per terabyte scanned: each query's estimate shows its cost")


# -- the reference ----------------------------------------------------------------------------


@dataclass(frozen=True)
class OptionRow:
    """One option of a kind, as the reference shows it."""

    name: str
    default: str
    """The default as Python writes it; "" for an option without one (the target)."""
    description: str
    config: tuple[str, ...]
    """Its spellings in a config file (none: only Python can pass it)."""


def option_rows(ctype: ConnectorType) -> list[OptionRow]:
    """A kind's options in declaration order: the keywords model's fields (the config
    model's when it has no other)."""
    model = ctype.keywords_model or ctype.config_model
    if model is None:
        return []
    config = ctype.config_model.model_fields if ctype.config_model is not None else {}
    rows = []
    for name, info in model.model_fields.items():
        spellings = _spellings(name, config[name]) if name in config else ()
        rows.append(OptionRow(name, _default(info), info.description or "", spellings))
    return rows


def docstring_reference(ctypes: Iterable[ConnectorType], *, indent: int = 8) -> str:
    """Each kind's options as docstring lines: ``row_limit=200 — what it sets``; ``*`` marks
    the ones only Python can pass (a config file cannot carry them)."""
    pad = " " * indent
    lines = [
        "",
        f"{pad}Options by kind (declared once, on each kind's options model; ``*``: Python",
        f"{pad}only, a config file cannot carry it):",
    ]
    for ctype in ctypes:
        rows = option_rows(ctype)
        if not rows:
            continue
        lines += ["", f"{pad}``{ctype.name}`` — {ctype.description}:"]
        for row in rows:
            spelled = f"{row.name}={row.default}" if row.default else f"{row.name} (required)"
            star = "" if row.config or not ctype.in_config else "*"
            lines += textwrap.wrap(
                f"``{spelled}``{star} — {row.description}",
                width=_WIDTH,
                initial_indent=f"{pad}    ",
                subsequent_indent=f"{pad}        ",
                break_on_hyphens=False,
            )
    return "\n".join(lines) + "\n"


def markdown_reference(ctypes: Iterable[ConnectorType]) -> str:
    """Each kind's options as a Markdown table (docs/connectors.md)."""
    parts = []
    for ctype in ctypes:
        rows = option_rows(ctype)
        if not rows:
            continue
        head = f"**`{ctype.name}`** — {ctype.description}"
        if ctype.in_config:
            table = ["| Option | Default | In a config file | What it sets |", "|---|---|---|---|"]
        else:
            table = ["| Option | Default | What it sets |", "|---|---|---|"]
        for row in rows:
            default = f"`{row.default}`" if row.default else "required"
            cells = [f"`{row.name}`", default]
            if ctype.in_config:
                cells.append(", ".join(f"`{s}`" for s in row.config) or "Python only")
            table.append("| " + " | ".join([*cells, _markdown(row.description)]) + " |")
        parts.append(head + "\n\n" + "\n".join(table))
    return "\n\n".join(parts)


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return ""
    value = info.get_default(call_default_factory=True, validated_data={})
    if isinstance(value, int) and not isinstance(value, bool) and value >= 10_000:
        return f"{value:_}"
    return repr(value)


def _spellings(name: str, info: FieldInfo) -> tuple[str, ...]:
    names = [name]
    alias = info.validation_alias
    for choice in getattr(alias, "choices", ()) or ([alias] if isinstance(alias, str) else ()):
        if isinstance(choice, str):
            names.append(choice)
    return tuple(dict.fromkeys(names))


def _markdown(text: str) -> str:
    """Docstring markup (double backticks) as Markdown's (single ones); no ``|`` that would
    end a table cell."""
    return text.replace("``", "`").replace("|", "\\|")
