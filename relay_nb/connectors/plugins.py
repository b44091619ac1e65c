"""Connector plugins: connector types nobody here wrote, used like the built-in ones.

A :class:`ConnectorType` names a kind of connector (its ``type`` in ``relay.config.json``),
says how to build one (``factory(connector_id, **options)``), what its options are (an
optional pydantic ``config_model``) and which URL schemes ``relay.connect(id, URL)`` hands
to it. Types come from two places:

- **installed packages**, through the ``relay_nb.connectors`` entry point group (the entry
  point's name is the type's name; its value a ``ConnectorType`` or a zero-argument function
  returning one). They are read lazily — only when a name or scheme that is not built-in is
  looked up, or the types are listed — so ``import relay_nb`` reads no package metadata.
  A broken plugin (it fails to import, gives the wrong object, or claims a built-in name)
  is skipped with a :class:`ConnectorPluginWarning` naming its entry point and distribution;
  the built-in connectors never depend on it.
- **notebook cells**, through :func:`register_connector_type`. A re-run cell replaces the
  type it registered before; overriding an installed plugin's type takes ``replace=True``.

No plugin can take a built-in type name (``sql``, ``postgres``, ``http``…) or a built-in URL
scheme (``postgresql``, ``mongodb``, ``https``…): what the built-ins mean never depends on
what else is installed.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from relay_nb.connectors.base import Connector, check_connector_id
from relay_nb.errors import ConfigurationError, RelayError
from relay_nb.redaction import redact

__all__ = [
    "BUILTIN_SCHEMES",
    "BUILTIN_TYPE_NAMES",
    "ENTRY_POINT_GROUP",
    "TYPE_NAME",
    "ConnectorPluginWarning",
    "ConnectorType",
    "ConnectorTypeInfo",
    "connector_type_for_scheme",
    "connector_types",
    "find_connector_type",
    "register_connector_type",
    "unknown_type_message",
    "unregister_connector_type",
]

ENTRY_POINT_GROUP = "relay_nb.connectors"
TYPE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]{0,39}$")
_MAX_PROBLEM_CHARS = 300


@dataclass(frozen=True)
class _Builtin:
    name: str
    aliases: tuple[str, ...]
    url_schemes: tuple[str, ...]
    description: str
    in_config: bool = True


_BUILTINS = (
    _Builtin(
        "sql",
        ("postgres", "postgresql", "mysql", "mariadb", "sqlite", "duckdb"),
        ("postgresql", "postgres", "mysql", "mariadb", "sqlite", "duckdb", "mssql", "oracle"),
        "a SQL database (any SQLAlchemy URL): guarded read-only SQL",
    ),
    _Builtin("mongo", ("mongodb",), ("mongodb", "mongodb+srv"), "MongoDB: find and aggregate"),
    _Builtin("http", (), ("http", "https"), "an HTTP API under a fixed base URL"),
    _Builtin("websearch", ("web_search",), (), "web search (tavily, brave, serper)"),
    _Builtin("dataframe", (), (), "pandas DataFrames as SQL tables: relay.connect(id, df)", False),
    _Builtin("mcp", (), (), "an MCP server (stdio or streamable HTTP): relay_nb.MCP(...)"),
)

BUILTIN_TYPE_NAMES = frozenset(n for b in _BUILTINS for n in (b.name, *b.aliases))
"""Names no plugin may take: the config-file types and the kinds built only from Python."""
BUILTIN_SCHEMES = frozenset(s for b in _BUILTINS for s in b.url_schemes)
"""URL schemes no plugin may claim (a SQL URL's base dialect, before ``+driver``)."""
_CONFIG_TYPE_NAMES = sorted(n for b in _BUILTINS if b.in_config for n in (b.name, *b.aliases))


class ConnectorPluginWarning(UserWarning):
    """An installed connector plugin could not be used (it is skipped; the rest work)."""


@dataclass(frozen=True)
class ConnectorType:
    """One kind of connector a plugin (or a notebook cell) adds.

    - ``name``: its ``type`` in ``relay.config.json``, lowercase (``csvdir``, ``s3-parquet``).
    - ``factory(connector_id, **options) -> Connector``: builds one.
    - ``config_model``: a pydantic model validating the options (the JSON ``config`` and
      ``relay.connect`` keywords); its ``model_dump()`` is what the factory receives.
      Without it the factory's own keyword parameters are the accepted options.
    - ``url_schemes``: ``relay.connect(id, "scheme://…")`` builds this type; ``from_url``
      turns such a URL into options (default ``{"url": the URL}``).
    - ``path_options``: options naming files or directories; a relative one in a config file
      is read from the file's directory, like the built-ins' ``openapi``.
    """

    name: str
    factory: Callable[..., Connector]
    config_model: type[BaseModel] | None = None
    url_schemes: tuple[str, ...] = ()
    from_url: Callable[[str], Mapping[str, Any]] | None = None
    path_options: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not TYPE_NAME.match(self.name):
            raise ConfigurationError(
                f"connector type name {self.name!r} must be lowercase: a letter, then up to 39 "
                "letters, digits, '_' or '-' (e.g. 'csvdir')"
            )
        if self.name in BUILTIN_TYPE_NAMES:
            raise ConfigurationError(
                f"{self.name!r} is a built-in connector type; give the plugin's type another name"
            )
        if not callable(self.factory):
            raise ConfigurationError(f"connector type {self.name!r}: factory must be callable")
        model = self.config_model
        if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ConfigurationError(
                f"connector type {self.name!r}: config_model must be a pydantic BaseModel class"
            )
        schemes = (self.url_schemes,) if isinstance(self.url_schemes, str) else self.url_schemes
        schemes = tuple(str(s).lower().removesuffix("://") for s in schemes)
        for scheme in schemes:
            if not _SCHEME.match(scheme):
                raise ConfigurationError(
                    f"connector type {self.name!r}: {scheme!r} is not a URL scheme"
                )
            if _is_builtin_scheme(scheme):
                raise ConfigurationError(
                    f"connector type {self.name!r}: the {scheme}:// scheme belongs to a built-in "
                    "connector; claim a scheme of the plugin's own"
                )
        object.__setattr__(self, "url_schemes", schemes)
        object.__setattr__(self, "path_options", tuple(self.path_options))

    # -- options ---------------------------------------------------------------------------------

    def option_names(self) -> list[str] | None:
        """The options this type takes (None: any — a ``**kwargs`` factory or open model)."""
        if self.config_model is not None:
            if self.config_model.model_config.get("extra") == "allow":
                return None
            names: list[str] = []
            for name, info in self.config_model.model_fields.items():
                names.append(name)
                names.extend(_alias_names(info.alias, info.validation_alias))
            return list(dict.fromkeys(names))
        try:
            parameters = list(inspect.signature(self.factory).parameters.values())
        except (TypeError, ValueError):
            return None
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            return None
        keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        return [p.name for p in parameters[1:] if p.kind in keyword]

    def check_options(
        self, options: Mapping[str, Any], *, base_dir: Path | None = None
    ) -> dict[str, Any]:
        """The factory's keyword arguments for ``options``, validated.

        Raises pydantic's ``ValidationError`` with locations relative to the options, so a
        config file reports ``connectors[0].config.path`` like a built-in's error.
        """
        accepted = self.option_names()
        if accepted is not None:
            unknown = [key for key in options if key not in accepted]
            if unknown:
                takes = ", ".join(accepted) or "no options"
                raise ValidationError.from_exception_data(
                    self.name,
                    [
                        InitErrorDetails(
                            type=PydanticCustomError(
                                "extra_forbidden",
                                "Extra inputs are not permitted ({kind} takes: {takes})",
                                {"kind": self.name, "takes": takes},
                            ),
                            loc=(key,),
                            input=options[key],
                        )
                        for key in unknown
                    ],
                )
        resolved = {
            key: _resolve_path(value, base_dir) if key in self.path_options else value
            for key, value in options.items()
        }
        if self.config_model is None:
            return resolved
        return self.config_model.model_validate(resolved).model_dump()

    # -- building --------------------------------------------------------------------------------

    def create(
        self,
        connector_id: str,
        options: Mapping[str, Any],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> Connector:
        """Build a connector from already-checked options (see :meth:`check_options`).

        A factory that fails other than with a relay_nb error is reported as this type's
        failure (the original stays chained); what it returns must be a ``Connector`` with
        the id asked for. ``name`` and ``description`` go to the factory when it takes them,
        else onto the connector; its ``kind`` becomes this type's name, a missing ``name``
        the id.
        """
        check_connector_id(connector_id)
        common = {"name": name, "description": description}
        given = {k: v for k, v in common.items() if v is not None and _takes(self.factory, k)}
        try:
            connector = self.factory(connector_id, **options, **given)
        except RelayError:
            raise
        except Exception as exc:
            raise ConfigurationError(
                f"the {self.name!r} connector could not be built: {_describe(exc)}"
            ) from exc
        if not isinstance(connector, Connector):
            raise ConfigurationError(
                f"the {self.name!r} connector type's factory returned "
                f"{type(connector).__name__}, not a relay_nb.Connector"
            )
        if getattr(connector, "id", None) != connector_id:
            connector.close()
            raise ConfigurationError(
                f"the {self.name!r} connector type built a connector with id "
                f"{getattr(connector, 'id', None)!r}, not {connector_id!r}"
            )
        connector.kind = self.name  # what the status table shows: the type asked for, even
        # when the factory composes a built-in (a DataFrameConnector over a file, say)
        if name is not None:
            connector.name = name
        elif not getattr(connector, "name", None):
            connector.name = connector_id
        if description is not None:
            connector.description = description
        return connector

    def connect(
        self, connector_id: str, options: Mapping[str, Any], *, url: str | None = None
    ) -> Connector:
        """What ``relay.connect(id, url_or_type_name, **options)`` does with this type:
        ``name`` and ``description`` are every connector's; the rest are checked like a
        built-in's (an unknown one is reported with the accepted ones)."""
        rest = dict(options)
        accepted = self.option_names()
        common = {
            key: rest.pop(key)
            for key in ("name", "description")
            if key in rest and (accepted is None or key not in accepted)
        }
        if url is not None:
            try:
                from_url = dict(self.from_url(url) if self.from_url else {"url": url})
            except RelayError:
                raise
            except Exception as exc:
                raise ConfigurationError(
                    f"the {self.name} connector cannot read its URL: {_describe(exc)}"
                ) from None
            twice = sorted(set(from_url) & set(rest))
            if twice:
                raise ConfigurationError(
                    f"{', '.join(twice)} is given twice: by the {self.name} URL and as a keyword"
                )
            rest = {**from_url, **rest}
        try:
            checked = self.check_options(rest)
        except ValidationError as exc:
            raise ConfigurationError(self._options_message(exc, accepted)) from None
        return self.create(connector_id, checked, **common)

    def _options_message(self, exc: ValidationError, accepted: list[str] | None) -> str:
        unknown = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden"]
        if unknown and accepted is not None:
            takes = ", ".join(dict.fromkeys(["name", "description", *accepted]))
            return (
                f"the {self.name} connector does not take {', '.join(unknown)}; it takes: {takes}"
            )
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'options'}: {e['msg']}"
            for e in exc.errors()[:5]
        ]
        return f"the {self.name} connector's options are not valid: " + "; ".join(problems)


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


@dataclass(frozen=True)
class _Plugin:
    ctype: ConnectorType
    entry_point: str
    distribution: str


_lock = threading.RLock()
_cell_types: dict[str, ConnectorType] = {}
_loaded: dict[tuple[str, str, str], _Plugin | None] = {}
_duplicates_warned: set[tuple[str, str]] = set()


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
    with _lock:
        if not replace and ctype.name not in _cell_types:
            installed = [ep for ep in _entry_points() if ep.name == ctype.name]
            if installed:
                raise ConfigurationError(
                    f"connector type {ctype.name!r} is provided by the installed package "
                    f"{_distribution(installed[0])}; pass replace=True to use yours instead "
                    "in this kernel"
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
    with _lock:
        ctype = _cell_types.pop(name, None)
    if ctype is None:
        raise ConfigurationError(
            f"no connector type {name!r} was registered from a cell; registered: "
            f"{sorted(_cell_types) or 'none'}"
        )
    return ctype


# -- lookups -----------------------------------------------------------------------------------


def find_connector_type(name: str) -> ConnectorType | None:
    """The non-built-in type called ``name``: a notebook's first, else an installed plugin's
    (only the entry points of that name are loaded). None for built-ins and unknown names."""
    if not isinstance(name, str) or name in BUILTIN_TYPE_NAMES or not TYPE_NAME.match(name):
        return None
    with _lock:
        found = _cell_types.get(name)
        if found is not None:
            return found
        plugin = _plugins(name).get(name)
    return None if plugin is None else plugin.ctype


def connector_type_for_scheme(scheme: str) -> ConnectorType | None:
    """The type that claims URL ``scheme`` (notebook types first, then plugins); None for
    built-in schemes — those are never looked up among plugins."""
    scheme = scheme.lower()
    if _is_builtin_scheme(scheme) or not _SCHEME.match(scheme):
        return None
    with _lock:
        for ctype in _cell_types.values():
            if scheme in ctype.url_schemes:
                return ctype
        claimed: dict[str, _Plugin] = {}
        for plugin in _plugins().values():
            for own in plugin.ctype.url_schemes:
                first = claimed.setdefault(own, plugin)
                if first is not plugin and (own, plugin.entry_point) not in _duplicates_warned:
                    _duplicates_warned.add((own, plugin.entry_point))
                    _warn(
                        f"connector plugin {plugin.entry_point!r} ({plugin.distribution}) "
                        f"claims the {own}:// scheme, which {first.distribution} claims too; "
                        f"{first.distribution}'s type {first.ctype.name!r} builds it"
                    )
        found = claimed.get(scheme)
    return None if found is None else found.ctype


def connector_types() -> list[ConnectorTypeInfo]:
    """Every connector type this kernel knows: built-in, registered from cells, installed."""
    rows = [
        ConnectorTypeInfo(source="built-in", origin="relay_nb", **dataclasses.asdict(b))
        for b in _BUILTINS
    ]
    with _lock:
        cells = dict(_cell_types)
        plugins = _plugins()
    for ctype in cells.values():
        origin = getattr(ctype.factory, "__module__", None) or "a notebook cell"
        rows.append(_info(ctype, "notebook", origin))
    for name, plugin in plugins.items():
        if name not in cells:
            rows.append(_info(plugin.ctype, "plugin", plugin.distribution, plugin.entry_point))
    return rows


def unknown_type_message(name: str) -> str:
    """Why ``name`` is no connector type, with the known ones and the way to add one."""
    with _lock:
        extra = sorted(set(_cell_types) | set(_plugins()))
    if name in BUILTIN_TYPE_NAMES:
        return f"{name!r} connectors are built from Python, not from a config file: " + next(
            b.description for b in _BUILTINS if name in (b.name, *b.aliases)
        )
    return (
        f"Input tag {name!r} found using 'type' does not match any connector type "
        f"(built-in: {', '.join(_CONFIG_TYPE_NAMES)}; "
        f"from plugins and notebook cells: {', '.join(extra) or 'none'}). A plugin's type "
        "needs its package installed where the kernel runs (pip install …, then restart the "
        f"kernel), which registers it under the {ENTRY_POINT_GROUP!r} entry point group; or run "
        "relay_nb.register_connector_type(...) in a cell first"
    )


# -- entry points ------------------------------------------------------------------------------


def _entry_points() -> list[EntryPoint]:
    """This group's entry points, one per (name, value, distribution), in a stable order: a
    directory on the path twice (``--target`` dirs, site-packages) lists a package twice."""
    from importlib.metadata import entry_points

    unique: dict[tuple[str, str, str], EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        unique.setdefault((ep.name, ep.value, _distribution(ep)), ep)
    return [unique[key] for key in sorted(unique)]


def _plugins(name: str | None = None) -> dict[str, _Plugin]:
    """Installed types by name (only those called ``name`` when given), each loaded once.
    Two packages providing one name: the first (by distribution) wins, with a warning."""
    found: dict[str, _Plugin] = {}
    for ep in _entry_points():
        if name is not None and ep.name != name:
            continue
        plugin = _load(ep)
        if plugin is None:
            continue
        first = found.setdefault(plugin.ctype.name, plugin)
        if first is not plugin and (ep.name, plugin.distribution) not in _duplicates_warned:
            _duplicates_warned.add((ep.name, plugin.distribution))
            _warn(
                f"connector plugin {plugin.entry_point!r} ({plugin.distribution}) is ignored: "
                f"{first.distribution} provides a type named {ep.name!r} too"
            )
    return found


def _load(ep: EntryPoint) -> _Plugin | None:
    key = (ep.name, ep.value, _distribution(ep))
    if key in _loaded:
        return _loaded[key]
    where = f"connector plugin entry point {f'{ep.name} = {ep.value}'!r} ({key[2]})"
    plugin: _Plugin | None = None
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
            problem = ""
            plugin = _Plugin(value, f"{ep.name} = {ep.value}", key[2])
    except Exception as exc:
        problem = f"loading it failed: {_describe(exc)}"
    if plugin is None:
        _warn(f"{where} is skipped: {problem}. The built-in connectors are not affected.")
    _loaded[key] = plugin
    return plugin


def _distribution(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "an unknown distribution"
    return f"{dist.metadata['Name']} {dist.version}"


def _warn(message: str) -> None:
    warnings.warn(message, ConnectorPluginWarning, stacklevel=3)


# -- helpers -----------------------------------------------------------------------------------


def _info(ctype: ConnectorType, source: Any, origin: str, ep: str | None = None) -> Any:
    options = ctype.option_names()
    return ConnectorTypeInfo(
        name=ctype.name,
        source=source,
        origin=origin,
        entry_point=ep,
        url_schemes=ctype.url_schemes,
        options=None if options is None else tuple(options),
        description=ctype.description,
    )


def _takes(factory: Callable[..., Any], keyword: str) -> bool:
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    found = parameters.get(keyword)
    if found is not None:
        return found.kind in (
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def _is_builtin_scheme(scheme: str) -> bool:
    return scheme in BUILTIN_SCHEMES or scheme.split("+", 1)[0] in BUILTIN_SCHEMES


def _alias_names(alias: str | None, validation_alias: Any) -> list[str]:
    names = [alias] if isinstance(alias, str) else []
    if isinstance(validation_alias, str):
        names.append(validation_alias)
    for choice in getattr(validation_alias, "choices", ()):
        if isinstance(choice, str):
            names.append(choice)
    return names


def _resolve_path(value: Any, base_dir: Path | None) -> Any:
    if base_dir is None or not isinstance(value, str | os.PathLike):
        return value
    path = Path(value).expanduser()
    if path.is_absolute():
        return value
    resolved = (base_dir / path).resolve()
    return str(resolved) if isinstance(value, str) else resolved


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
    return text if len(text) <= _MAX_PROBLEM_CHARS else text[: _MAX_PROBLEM_CHARS - 1] + "…"
