"""The facade's small translations: a question's keyword options into its settings layer (and
into the keywords ``help()`` shows), the ``ledger=`` setting into a ledger, a validation error
into its first problem's line."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from relay_nb.agent.ledger import UsageLedger
from relay_nb.agent.settings import SettingsLayer, options_layer

__all__ = ["LedgerSetting", "call_layer", "first_problem", "ledger_from", "takes_options"]

LedgerSetting = UsageLedger | str | os.PathLike[str] | Literal[False] | None
"""None: the default file (``$RELAY_DATA_DIR/usage.sqlite``); a path or URL; False: none."""

Method = TypeVar("Method", bound=Callable[..., Any])


def takes_options(options: type[Mapping[str, Any]]) -> Callable[[Method], Method]:
    """Show the keys of ``options`` (a ``TypedDict`` of per-question settings) as the
    decorated method's keywords, where its ``**options: Unpack[...]`` is.

    Type checkers and IDEs read ``Unpack``; this is for what reads the signature at run time:
    ``help(relay.ask)``, ``inspect.signature``, a notebook's tab completion. Each option is a
    keyword-only parameter defaulting to None (not set), placed before the method's other
    keyword-only ones.
    """

    def show(method: Method) -> Method:
        signature = inspect.signature(method)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        at = next((i for i, p in enumerate(own) if p.kind is p.KEYWORD_ONLY), len(own))
        shown = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
            for name, kind in _annotations(options).items()
        ]
        method.__signature__ = signature.replace(parameters=[*own[:at], *shown, *own[at:]])
        return method

    return show


def call_layer(
    options: Mapping[str, Any], *, accepted: type[Mapping[str, Any]], method: str
) -> SettingsLayer:
    """One question's settings layer from the keywords ``method`` got in ``**options``.

    A keyword that ``accepted`` (the method's options ``TypedDict``) does not declare is the
    ``TypeError`` Python raises for an unexpected keyword; values are checked by the engine,
    as every layer's are (a ``ConfigurationError``).
    """
    known = _annotations(accepted)
    unexpected = next((name for name in options if name not in known), None)
    if unexpected is not None:
        raise TypeError(f"{method}() got an unexpected keyword argument {unexpected!r}")
    return options_layer(options)


def _annotations(options: type[Mapping[str, Any]]) -> dict[str, Any]:
    """``{key: annotation}`` of a ``TypedDict`` (inherited keys first), each annotation as
    its source text, as in the signature of a function written with those keywords."""
    return {
        name: getattr(annotation, "__forward_arg__", annotation)
        for name, annotation in options.__annotations__.items()
    }


def ledger_from(setting: LedgerSetting) -> UsageLedger | None:
    if setting is False:
        return None
    if isinstance(setting, UsageLedger):
        return setting
    return UsageLedger(setting if setting is None or isinstance(setting, str) else Path(setting))


def first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    return f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
