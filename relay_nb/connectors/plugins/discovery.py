"""Installed plugins: the ``relay_nb.connectors`` entry points, read lazily and once.

The group is read the first time a name or scheme that is not built-in is looked up (or the
types are listed) and then kept for the process: a lookup costs a dictionary read, not a
scan of every installed distribution's metadata. A package installed while the kernel runs
is therefore seen after a kernel restart (the unknown-type message says so). Each entry
point is loaded once; a broken one is skipped with a :class:`ConnectorPluginWarning` naming
it and its distribution, and never affects the built-ins.

Every type that enters — an entry point's here, a notebook cell's in
:func:`~relay_nb.connectors.plugins.registry.register_connector_type` — first passes
:func:`refuse_builtin_meaning`: no plugin may take what a built-in kind means
(:mod:`relay_nb.connectors.kinds`).
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path

from relay_nb.connectors.kinds import (
    BUILTIN_TYPE_NAMES,
    RESERVED_TYPE_NAMES,
    WEB_SEARCH_PROVIDERS,
    is_builtin_scheme,
    is_sql_dialect_scheme,
)
from relay_nb.connectors.types import ConnectorType, describe_error
from relay_nb.errors import ConfigurationError

__all__ = [
    "ENTRY_POINT_GROUP",
    "ConnectorPluginWarning",
    "Plugin",
    "distribution",
    "entry_points",
    "lock",
    "plugins",
    "refuse_builtin_meaning",
    "warn",
]

ENTRY_POINT_GROUP = "relay_nb.connectors"

lock = threading.RLock()
"""Guards the entry-point cache, the loaded plugins and the notebook-registered types."""
_cached: list[EntryPoint] | None = None
_loaded: dict[tuple[str, str, str], Plugin | None] = {}
warned: set[tuple[str, str]] = set()
"""(name or scheme, entry point) pairs already warned about as duplicates."""
_RELAY_DIR = str(Path(__file__).resolve().parents[2]) + os.sep
_SKIPPED_PACKAGES = frozenset({"pydantic", "pydantic_core"})


class ConnectorPluginWarning(UserWarning):
    """An installed connector plugin could not be used (it is skipped; the rest work)."""


@dataclass(frozen=True)
class Plugin:
    ctype: ConnectorType
    entry_point: str
    distribution: str


def entry_points() -> list[EntryPoint]:
    """This group's entry points, one per (name, value, distribution), in a stable order (a
    directory on the path twice lists a package twice); read once per process."""
    global _cached
    with lock:
        if _cached is None:
            from importlib.metadata import entry_points as read

            unique: dict[tuple[str, str, str], EntryPoint] = {}
            for ep in read(group=ENTRY_POINT_GROUP):
                unique.setdefault((ep.name, ep.value, distribution(ep)), ep)
            _cached = [unique[key] for key in sorted(unique)]
        return _cached


def plugins(name: str | None = None) -> dict[str, Plugin]:
    """Installed types by name (only those called ``name`` when given), each loaded once.
    Two packages providing one name: the first (by distribution) wins, with a warning."""
    found: dict[str, Plugin] = {}
    with lock:
        for ep in entry_points():
            if name is not None and ep.name != name:
                continue
            plugin = _load(ep)
            if plugin is None:
                continue
            first = found.setdefault(plugin.ctype.name, plugin)
            if first is not plugin and (ep.name, plugin.entry_point) not in warned:
                warned.add((ep.name, plugin.entry_point))
                warn(
                    f"connector plugin {plugin.entry_point!r} ({plugin.distribution}) is "
                    f"ignored: {first.distribution} provides a type named {ep.name!r} too"
                )
    return found


def _load(ep: EntryPoint) -> Plugin | None:
    key = (ep.name, ep.value, distribution(ep))
    if key in _loaded:
        return _loaded[key]
    where = f"connector plugin entry point {f'{ep.name} = {ep.value}'!r} ({key[2]})"
    plugin: Plugin | None = None
    try:
        value = ep.load()
        if not isinstance(value, ConnectorType) and callable(value) and not isinstance(value, type):
            value = value()
        if not isinstance(value, ConnectorType):
            problem = (
                f"it gives {type(value).__name__}, not a relay_nb.ConnectorType (or a "
                "function returning one)"
            )
        elif value.name != ep.name:
            problem = (
                f"its type is named {value.name!r}; the entry point must be named like its type"
            )
        else:
            problem = _builtin_meaning(value)
            if not problem:
                plugin = Plugin(value, f"{ep.name} = {ep.value}", key[2])
    except Exception as exc:
        problem = f"loading it failed: {describe_error(exc)}"
    if plugin is None:
        warn(f"{where} is skipped: {problem}. The built-in connectors are not affected.")
    _loaded[key] = plugin
    return plugin


def refuse_builtin_meaning(ctype: ConnectorType) -> None:
    """A plugin's (or a cell's) type may take no built-in name, web-search provider name,
    built-in URL scheme or scheme SQLAlchemy reads as a database: what the built-ins mean
    never depends on what else is installed. Called where a type enters the registry."""
    if ctype.builtin:
        raise ConfigurationError(f"{ctype.name!r} is a built-in connector type; it is registered")
    if ctype.name in BUILTIN_TYPE_NAMES:
        raise ConfigurationError(
            f"{ctype.name!r} is a built-in connector type; give the plugin's type another name"
        )
    if ctype.name in RESERVED_TYPE_NAMES:
        raise ConfigurationError(
            f"{ctype.name!r} names a built-in web-search provider "
            f"({', '.join(WEB_SEARCH_PROVIDERS)}); give the plugin's type another name"
        )
    for scheme in ctype.url_schemes:
        if is_builtin_scheme(scheme):
            raise ConfigurationError(
                f"connector type {ctype.name!r}: the {scheme}:// scheme belongs to a built-in "
                "connector; claim a scheme of the plugin's own"
            )
        if is_sql_dialect_scheme(scheme):
            raise ConfigurationError(
                f"connector type {ctype.name!r}: {scheme}:// is a SQLAlchemy database URL "
                "(relay.connect builds a SQL connector from it); claim a scheme of the "
                "plugin's own"
            )


def _builtin_meaning(ctype: ConnectorType) -> str:
    """Why a plugin's type would change what a built-in means ("": it would not)."""
    try:
        refuse_builtin_meaning(ctype)
    except ConfigurationError as exc:
        return str(exc)
    return ""


def distribution(ep: EntryPoint) -> str:
    """``name version`` of the package an entry point comes from, for messages."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "an unknown distribution"
    try:
        name, version = dist.metadata["Name"], dist.version
    except Exception:
        name = version = None
    if name:
        return f"{name} {version}" if version else str(name)
    folder = getattr(dist, "_path", None)  # a dist-info directory without METADATA
    where = f" ({Path(folder).name})" if folder is not None else ""
    return f"a distribution without metadata{where}"


def warn(message: str) -> None:
    """A :class:`ConnectorPluginWarning` pointing at the caller's code (the cell or script
    that asked for the type), not at relay_nb's or pydantic's."""
    warnings.warn(message, ConnectorPluginWarning, stacklevel=_outside_level())


def _outside_level() -> int:
    frame, level = sys._getframe(2), 2  # 1: warn's caller, which is inside relay_nb
    while frame is not None:
        filename = frame.f_code.co_filename
        inside = filename.startswith(_RELAY_DIR) or bool(
            _SKIPPED_PACKAGES & set(Path(filename).parts)
        )
        if not inside and not filename.startswith("<frozen"):
            return level
        frame, level = frame.f_back, level + 1
    return 2
