"""Packages whose public names load on first use: one ``__getattr__`` and ``__dir__`` for all.

``import relay_nb`` must stay fast (no pydantic, pandas, SQLAlchemy or sqlglot until a name
is used), and so must importing a connector kind's package to read its record. A package
lists ``{public name: module that defines it}`` and takes its module-level ``__getattr__``
and ``__dir__`` from :func:`lazy_exports`; a name is imported the first time it is read,
then cached in the package's namespace. Type checkers and IDEs read the same names from an
``if TYPE_CHECKING:`` block beside the map.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``), whose public names are
    the keys of ``exports``, each defined in the module its value names."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # cached: later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
