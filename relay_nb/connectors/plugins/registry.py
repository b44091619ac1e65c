"""Which connector types this kernel knows: built-in, registered from cells, installed.

Built-in names and schemes are never looked up among plugins (:func:`config_type` answers
them first); otherwise a notebook cell's type (:func:`register_connector_type`) comes first,
then an installed plugin's (:mod:`~relay_nb.connectors.plugins.discovery`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.kinds import (
    BUILTIN_TYPES,
    CONFIG_TYPE_NAMES,
    RESERVED_TYPE_NAMES,
    builtin_type,
    is_builtin_scheme,
)
from relay_nb.connectors.plugins import discovery
from relay_nb.connectors.plugins.discovery import refuse_builtin_meaning
from relay_nb.connectors.types import SCHEME, TYPE_NAME, ConnectorType
from relay_nb.errors import ConfigurationError

__all__ = [
    "ConnectorTypeInfo",
    "config_type",
    "connector_type_for_scheme",
    "connector_types",
    "find_connector_type",
    "register_connector_type",
    "unknown_type_message",
    "unregister_connector_type",
]

_cell_types: dict[str, ConnectorType] = {}


class ConnectorTypeInfo(BaseModel):
    """One row of :func:`connector_types`: what a type is called and where it came from."""

    model_config = ConfigDict(frozen=True)

    name: str
    source: Literal["built-in", "notebook", "plugin"]
    origin: str
    """``relay_nb``; the module that registered a notebook type; a plugin's distribution."""
    entry_point: str | None = None
    aliases: tuple[str, ...] = ()
    url_schemes: tuple[str, ...] = ()
    options: tuple[str, ...] | None = None
    """What its JSON ``config`` / ``connect`` keywords may hold (None: not declared)."""
    description: str = ""
    in_config: bool = True
    """Whether ``relay.config.json`` can declare it (DataFrames come only from Python)."""


# -- registering from a cell -------------------------------------------------------------------


def register_connector_type(ctype: ConnectorType, *, replace: bool = False) -> ConnectorType:
    """Make ``ctype`` usable in ``relay.connect`` and config files in this kernel.

    Registering a name again (a re-run cell) replaces the earlier one. An installed plugin's
    type of the same name is replaced only with ``replace=True``; a URL scheme another
    notebook type claims is refused (unregister that one first).
    """
    if not isinstance(ctype, ConnectorType):
        given = f"the class {ctype.__name__}" if isinstance(ctype, type) else type(ctype).__name__
        raise ConfigurationError(
            f"expected a relay_nb.ConnectorType, got {given}; wrap a connector class as "
            "ConnectorType(name='mytype', factory=MyConnector)"
        )
    refuse_builtin_meaning(ctype)
    with discovery.lock:
        if not replace and ctype.name not in _cell_types:
            installed = [ep for ep in discovery.entry_points() if ep.name == ctype.name]
            if installed:
                raise ConfigurationError(
                    f"connector type {ctype.name!r} is provided by the installed package "
                    f"{discovery.distribution(installed[0])}; pass replace=True to use yours "
                    "instead in this kernel"
                )
        for other in _cell_types.values():
            shared = set(other.url_schemes) & set(ctype.url_schemes)
            if other.name != ctype.name and shared:
                raise ConfigurationError(
                    f"the {', '.join(sorted(shared))}:// scheme is already claimed by connector "
                    f"type {other.name!r}; unregister_connector_type({other.name!r}) first"
                )
        _cell_types[ctype.name] = ctype
    return ctype


def unregister_connector_type(name: str) -> ConnectorType:
    """Forget a type registered from a cell (connectors already built keep working)."""
    with discovery.lock:
        ctype = _cell_types.pop(name, None)
        registered = sorted(_cell_types)
    if ctype is None:
        raise ConfigurationError(
            f"no connector type {name!r} was registered from a cell; registered: "
            f"{registered or 'none'}"
        )
    return ctype


# -- lookups -----------------------------------------------------------------------------------


def config_type(name: str) -> ConnectorType | None:
    """The type a config entry's ``type`` names: a built-in one (by any of its spellings)
    first, then a notebook's or an installed plugin's; None when nothing claims it."""
    return builtin_type(name) or find_connector_type(name)


def find_connector_type(name: str) -> ConnectorType | None:
    """The non-built-in type called ``name``: a notebook's first, else an installed plugin's
    (only the entry points of that name are loaded). None for built-ins and unknown names."""
    if not isinstance(name, str) or name in RESERVED_TYPE_NAMES or not TYPE_NAME.match(name):
        return None
    with discovery.lock:
        found = _cell_types.get(name)
        if found is not None:
            return found
        plugin = discovery.plugins(name).get(name)
    return None if plugin is None else plugin.ctype


def connector_type_for_scheme(scheme: str) -> ConnectorType | None:
    """The type that claims URL ``scheme`` (notebook types first, then plugins); None for
    built-in schemes — those are never looked up among plugins."""
    scheme = scheme.lower()
    if is_builtin_scheme(scheme) or not SCHEME.match(scheme):
        return None
    with discovery.lock:
        for ctype in _cell_types.values():
            if scheme in ctype.url_schemes:
                return ctype
        claimed: dict[str, discovery.Plugin] = {}
        for plugin in discovery.plugins().values():
            for own in plugin.ctype.url_schemes:
                first = claimed.setdefault(own, plugin)
                if first is not plugin and (own, plugin.entry_point) not in discovery.warned:
                    discovery.warned.add((own, plugin.entry_point))
                    discovery.warn(
                        f"connector plugin {plugin.entry_point!r} ({plugin.distribution}) "
                        f"claims the {own}:// scheme, which {first.distribution} claims too; "
                        f"{first.distribution}'s type {first.ctype.name!r} builds it"
                    )
        found = claimed.get(scheme)
    return None if found is None else found.ctype


def connector_types() -> list[ConnectorTypeInfo]:
    """Every connector type this kernel knows: built-in, registered from cells, installed
    (a package installed after the first lookup shows up once the kernel is restarted)."""
    rows = [_info(ctype, "built-in", "relay_nb") for ctype in BUILTIN_TYPES]
    with discovery.lock:
        cells = dict(_cell_types)
        plugins = discovery.plugins()
    for ctype in cells.values():
        origin = getattr(ctype.factory, "__module__", None) or "a notebook cell"
        rows.append(_info(ctype, "notebook", origin))
    for name, plugin in plugins.items():
        if name not in cells:
            rows.append(_info(plugin.ctype, "plugin", plugin.distribution, plugin.entry_point))
    return rows


def unknown_type_message(name: str, *, in_config: bool = True) -> str:
    """Why ``name`` is no connector type, with the known ones and the way to add one
    (``in_config``: it was a config entry's ``type``; else a bare word given to connect)."""
    with discovery.lock:
        extra = sorted(set(_cell_types) | set(discovery.plugins()))
    builtin = builtin_type(name)
    if in_config and builtin is not None:
        return f"{name!r} connectors are built from Python, not from a config file: " + (
            builtin.description
        )
    lead = (
        f"Input tag {name!r} found using 'type' does not match any connector type"
        if in_config
        else f"{name!r} is neither a URL nor a connector type: a database needs a SQLAlchemy "
        "URL such as sqlite:///path/to/file.db; a connector type is one of these"
    )
    return (
        f"{lead} (built-in: {', '.join(CONFIG_TYPE_NAMES)}; "
        f"from plugins and notebook cells: {', '.join(extra) or 'none'}). A plugin's type "
        "needs its package installed where the kernel runs (pip install …, then restart the "
        f"kernel), which registers it under the {discovery.ENTRY_POINT_GROUP!r} entry point "
        "group; or run relay_nb.register_connector_type(...) in a cell first"
    )


def _info(ctype: ConnectorType, source: Any, origin: str, ep: str | None = None) -> Any:
    options = ctype.option_names()
    return ConnectorTypeInfo(
        name=ctype.name,
        source=source,
        origin=origin,
        entry_point=ep,
        aliases=ctype.aliases,
        url_schemes=ctype.url_schemes,
        options=None if options is None else tuple(options),
        description=ctype.description,
        in_config=ctype.in_config,
    )
