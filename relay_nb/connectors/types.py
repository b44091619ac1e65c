"""``ConnectorType``: one kind of connector — its name, how to build one, what its options are,
which ``relay.connect`` targets and config entries it takes — the one record for the built-in
kinds (each package's ``kind.py``, listed in :mod:`relay_nb.connectors.kinds`) and for the
ones a plugin or a notebook cell adds (:mod:`relay_nb.connectors.plugins`). Also the
keyword-parameter reading ``relay.connect`` shares, and the one short, redacted description of
an exception every message here uses.

Nothing here knows which kinds exist: every ``kind.py`` imports this module, and the modules
that list the kinds (built-in or plugin) import those.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from relay_nb.connectors.base import Connector, check_connector_id
from relay_nb.errors import ConfigurationError, RelayError
from relay_nb.redaction import redact

__all__ = [
    "COMMON_OPTIONS",
    "SCHEME",
    "TYPE_NAME",
    "ConnectorType",
    "LazyFactory",
    "describe_error",
    "keyword_parameters",
]

COMMON_OPTIONS = ("name", "description")
"""What every connector takes, whatever its kind."""
TYPE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]{0,39}$")
_MAX_PROBLEM_CHARS = 300
_KEYWORD = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(frozen=True)
class ConnectorType:
    """One kind of connector: a built-in one, or one a plugin (or a notebook cell) adds.

    - ``name``: its ``type`` in ``relay.config.json``, lowercase (``csvdir``, ``s3-parquet``);
      ``aliases`` are other spellings a config file may use (``postgres`` for ``sql``).
    - ``factory(connector_id, **options) -> Connector``: builds one.
    - ``config_model``: a pydantic model validating the options (the JSON ``config`` and
      ``relay.connect`` keywords); its ``model_dump()`` is what the factory receives
      (``factory_defaults=True``: only the options given, so the factory's own defaults fill
      the rest and are stated once). Without it the factory's own keyword parameters are the
      accepted options. ``python_keywords=True``: ``relay.connect`` keywords go to the factory
      as given (objects such as an engine or a transport included), checked by its signature;
      the model then checks config entries only.
    - ``keywords_model``: every keyword the factory takes besides ``name`` and
      ``description`` — the config model's options and those only Python can pass (an engine,
      a ranker) — when they are more than ``config_model``'s; it declares them for the
      reference (:mod:`relay_nb.connectors.options`), and nothing validates against it.
    - ``url_schemes``: ``relay.connect(id, "scheme://…")`` builds this type; ``accepts(target)``
      says which other targets it builds from (a DataFrame, an engine, a provider name);
      ``from_url`` turns the target into options (default ``{"url": target}``).
    - ``path_options``: options naming files or directories; a relative one in a config file
      is read from the file's directory (a URL is left as it is).
    - ``in_config``: whether a config file may declare it (DataFrames come only from Python).
    """

    name: str
    factory: Callable[..., Connector]
    config_model: type[BaseModel] | None = None
    url_schemes: tuple[str, ...] = ()
    from_url: Callable[[Any], Mapping[str, Any]] | None = None
    path_options: tuple[str, ...] = ()
    description: str = ""
    aliases: tuple[str, ...] = ()
    accepts: Callable[[Any], bool] | None = None
    in_config: bool = True
    factory_defaults: bool = False
    python_keywords: bool = False
    builtin: bool = False
    """relay_nb's own kinds only. A plugin's type is checked where it enters (registered
    from a cell, loaded from an entry point) against the built-ins' names and schemes:
    :func:`relay_nb.connectors.plugins.discovery.refuse_builtin_meaning`."""
    keywords_model: type[BaseModel] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not TYPE_NAME.match(self.name):
            raise ConfigurationError(
                f"connector type name {self.name!r} must be lowercase: a letter, then up to 39 "
                "letters, digits, '_' or '-' (e.g. 'csvdir')"
            )
        object.__setattr__(self, "aliases", tuple(self.aliases))
        schemes = (self.url_schemes,) if isinstance(self.url_schemes, str) else self.url_schemes
        schemes = tuple(str(s).lower().removesuffix("://") for s in schemes)
        object.__setattr__(self, "url_schemes", schemes)
        object.__setattr__(self, "path_options", tuple(self.path_options))
        if not callable(self.factory):
            raise ConfigurationError(f"connector type {self.name!r}: factory must be callable")
        for field in ("config_model", "keywords_model"):
            model = getattr(self, field)
            if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise ConfigurationError(
                    f"connector type {self.name!r}: {field} must be a pydantic BaseModel class"
                )
        for scheme in schemes:
            if not SCHEME.match(scheme):
                raise ConfigurationError(
                    f"connector type {self.name!r}: {scheme!r} is not a URL scheme"
                )
        if self.aliases and not self.builtin:
            raise ConfigurationError(
                f"connector type {self.name!r}: aliases are for the built-in types; register "
                "each spelling as a type of its own"
            )

    @property
    def names(self) -> tuple[str, ...]:
        """Every spelling of this type in a config file: its name, then its aliases."""
        return (self.name, *self.aliases)

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
        read = keyword_parameters(self.factory, skip_first=True)
        return None if read is None or read[1] else read[0]

    def check_options(
        self, options: Mapping[str, Any], *, base_dir: Path | None = None
    ) -> dict[str, Any]:
        """The factory's keyword arguments for ``options``, validated.

        Raises pydantic's ``ValidationError`` with locations relative to the options, so a
        config file reports ``connectors[0].config.path`` like a built-in's error; a model
        that fails other than by validating (a ``PermissionError`` probing a bucket) is
        reported the same way, its message redacted.
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
        paths = self._path_keys()
        resolved = {
            key: _resolve_path(value, base_dir) if key in paths else value
            for key, value in options.items()
        }
        if self.config_model is None:
            return resolved
        try:
            checked = self.config_model.model_validate(resolved)
            return checked.model_dump(exclude_unset=self.factory_defaults)
        except ValidationError:
            raise
        except Exception as exc:
            raise ValidationError.from_exception_data(
                self.name,
                [
                    InitErrorDetails(
                        type=PydanticCustomError(
                            "plugin_options_failed",
                            "{problem} (raised while the {kind} type checked its options)",
                            {"kind": self.name, "problem": describe_error(exc)},
                        ),
                        loc=(),
                        input=None,
                    )
                ],
            ) from None

    def _path_keys(self) -> set[str]:
        """The ``path_options`` under every spelling the config model accepts for them."""
        keys = set(self.path_options)
        if self.config_model is not None:
            for name in self.path_options:
                info = self.config_model.model_fields.get(name)
                if info is not None:
                    keys.update(_alias_names(info.alias, info.validation_alias))
        return keys

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
                f"the {self.name!r} connector could not be built: {describe_error(exc)}"
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
        self, connector_id: str, options: Mapping[str, Any], *, url: Any = None
    ) -> Connector:
        """What ``relay.connect(id, target, **options)`` does with this type: the target (a
        URL, or an object the type ``accepts``) becomes options through ``from_url``;
        ``name`` and ``description`` are every connector's; the rest are checked (an unknown
        one is reported with the accepted ones)."""
        rest = dict(options)
        accepted = self._keyword_names() if self.python_keywords else self.option_names()
        common = {
            key: rest.pop(key)
            for key in COMMON_OPTIONS
            if key in rest and (accepted is None or key not in accepted)
        }
        if self.python_keywords:
            unknown = [key for key in rest if accepted is not None and key not in accepted]
            if unknown:
                takes = ", ".join(dict.fromkeys([*COMMON_OPTIONS, *(accepted or [])]))
                raise ConfigurationError(
                    f"the {self.name} connector does not take {', '.join(unknown)}; it takes: "
                    f"{takes}"
                )
        if url is not None:
            try:
                from_url = dict(self.from_url(url) if self.from_url else {"url": url})
            except RelayError:
                raise
            except Exception as exc:
                raise ConfigurationError(
                    f"the {self.name} connector cannot read its URL: {describe_error(exc)}"
                ) from None
            twice = sorted(set(from_url) & set(rest))
            if twice:
                raise ConfigurationError(
                    f"{', '.join(twice)} is given twice: by the {self.name} URL and as a keyword"
                )
            rest = {**from_url, **rest}
        if self.python_keywords:
            return self.create(connector_id, rest, **common)
        try:
            checked = self.check_options(rest)
        except ValidationError as exc:
            raise ConfigurationError(self._options_message(exc, accepted)) from None
        return self.create(connector_id, checked, **common)

    def _keyword_names(self) -> list[str] | None:
        """The factory's keyword-only parameters, its options (its positional ones are the
        target ``from_url`` fills); None when it takes any keyword."""
        read = keyword_parameters(self.factory, skip_first=True, keyword_only=True)
        return None if read is None or read[1] else read[0]

    def _options_message(self, exc: ValidationError, accepted: list[str] | None) -> str:
        unknown = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden"]
        if unknown and accepted is not None:
            takes = ", ".join(dict.fromkeys([*COMMON_OPTIONS, *accepted]))
            return (
                f"the {self.name} connector does not take {', '.join(unknown)}; it takes: {takes}"
            )
        problems = [
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" if e["loc"] else e["msg"]
            for e in exc.errors()[:5]
        ]
        # a model's message may echo its input: a ${VAR}-substituted secret
        return redact(f"the {self.name} connector's options are not valid: " + "; ".join(problems))


# -- shared helpers ----------------------------------------------------------------------------


class LazyFactory:
    """A factory named by ``"module:attribute"``, imported on first use, so that listing the
    built-in types imports no connector (nor its driver) until one is built or its options
    are read. ``__wrapped__`` is the real factory: signatures are read from it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._target: Callable[..., Connector] | None = None

    @property
    def __wrapped__(self) -> Callable[..., Connector]:
        target = self._target
        if target is None:
            import importlib

            module, _, attribute = self.path.partition(":")
            target = self._target = getattr(importlib.import_module(module), attribute)
        return target

    def __call__(self, *args: Any, **kwargs: Any) -> Connector:
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<factory {self.path}>"


def keyword_parameters(
    func: Callable[..., Any], *, skip_first: bool = False, keyword_only: bool = False
) -> tuple[list[str], bool] | None:
    """The keyword parameters ``func`` takes, and whether it takes any (``**kwargs``); None
    when its signature cannot be read (a builtin, some C extensions).

    ``skip_first`` leaves out the first parameter (a factory's connector id); with
    ``keyword_only`` a positional-or-keyword parameter is not an option (a connector class's
    ``url``). A ``__wrapped__`` function's real signature is read.
    """
    target = getattr(func, "__wrapped__", func)
    try:
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return None
    any_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
    if skip_first:
        parameters = parameters[1:]
    kinds = (inspect.Parameter.KEYWORD_ONLY,) if keyword_only else _KEYWORD
    return [p.name for p in parameters if p.kind in kinds], any_keyword


def describe_error(exc: BaseException) -> str:
    """A plugin's exception in one short line, type first, secrets redacted."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
    return text if len(text) <= _MAX_PROBLEM_CHARS else text[: _MAX_PROBLEM_CHARS - 1] + "…"


def _takes(factory: Callable[..., Any], keyword: str) -> bool:
    read = keyword_parameters(factory)
    return read is not None and (read[1] or keyword in read[0])


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
    if isinstance(value, str) and "://" in value:
        return value  # a URL, not a file
    path = Path(value).expanduser()
    if path.is_absolute():
        return value
    resolved = (base_dir / path).resolve()
    return str(resolved) if isinstance(value, str) else resolved
