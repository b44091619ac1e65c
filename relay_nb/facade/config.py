"""``relay.config.json``: connectors and skills declared in a file, loaded in one step.

The file is read at ``%load_ext relay_nb`` (from the working directory, or the path in
``RELAY_CONFIG``) or with ``Relay(config=...)`` / ``relay.load_config(path)``::

    {
      "connectors": [
        {"type": "postgres", "id": "shop",
         "config": {"url": "postgresql+psycopg://reader:${SHOP_DB_PASSWORD}@db/shop",
                    "tables": ["orders", "customers"]}},
        {"type": "http", "id": "billing",
         "config": {"base_url": "https://billing.internal/v1", "openapi": "billing.json",
                    "auth": {"type": "bearer", "token_env": "BILLING_TOKEN"}}},
        {"type": "websearch", "id": "web", "config": {"provider": "tavily"}}
      ],
      "skills": [{"name": "support", "prompt": "…", "connectors": ["shop", "billing"]}],
      "settings": {"model": "anthropic", "max_steps": 6, "max_cost_usd": 0.25},
      "schema_ttl_s": 300
    }

``settings`` is the ``config`` layer of the turn settings (:mod:`relay_nb.agent.settings`):
below what ``Relay(...)``, a skill or a question says, above the defaults.

Order of checks, so nothing half-applies: the JSON parses; no secret is written inline
(:func:`~relay_nb.connectors.specs.check_no_inline_secrets`); every ``${VAR}`` is set (a
missing one is named with its place in the file; in a URL's ``user:password@`` or query the
value is percent-encoded); pydantic validates the result — each entry's ``type`` is looked
up among the connector types (the built-in ones first, then plugins':
``relay_nb.connector_types()``) and its ``config`` checked by that type; only then are
connectors built — and if one cannot be, those already built are closed again.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from relay_nb.agent.routing import check_profile
from relay_nb.agent.session import Session
from relay_nb.agent.settings import settings_layer
from relay_nb.agent.skills import Skill, Tier
from relay_nb.connectors.base import Connector
from relay_nb.connectors.specs import (
    ENV_REFERENCE,
    ConnectorEntry,
    build_connector,
    check_no_inline_secrets,
    is_secret_option,
)
from relay_nb.context.knowledge_source import KnowledgeSource
from relay_nb.errors import ConfigurationError
from relay_nb.knowledge.load import load_knowledge_with_file
from relay_nb.redaction import redact, register_secret
from relay_nb.untrusted import CONFIG, load_json, read_text

__all__ = [
    "CONFIG_FILENAME",
    "RelayConfig",
    "SkillSpec",
    "apply_config",
    "build_connectors",
    "build_skill",
    "load_config",
]

CONFIG_FILENAME = "relay.config.json"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|AUTH|CREDENTIAL", re.IGNORECASE)
_MAX_ERRORS = 5


class SkillSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    prompt: str = Field(validation_alias=AliasChoices("prompt", "systemPrompt"))
    connectors: list[str] = Field(
        default=[], validation_alias=AliasChoices("connectors", "connectorIds")
    )
    tools: list[str] = []
    tier: Tier | None = Field(default=None, validation_alias=AliasChoices("tier", "preferredTier"))
    description: str | None = None
    max_steps: int | None = None
    examples: list[str] = []


class RelayConfig(BaseModel):
    """The validated file; ``base_dir`` anchors relative paths (an OpenAPI file…)."""

    model_config = ConfigDict(extra="forbid")

    connectors: list[ConnectorEntry] = []
    skills: list[SkillSpec] = []
    settings: dict[str, Any] = {}
    """The ``config`` settings layer, checked by :func:`settings_layer` (a model is a
    profile string here)."""
    schema_ttl_s: float | None = None
    base_dir: Path | None = Field(default=None, exclude=True)


def load_config(source: str | os.PathLike[str] | Mapping[str, Any]) -> RelayConfig:
    """Read, check and validate a config file (or an already-parsed mapping)."""
    if isinstance(source, Mapping):
        raw: Any = dict(source)
        label, base_dir = "config", None
    else:
        path = Path(source).expanduser()
        label, base_dir = path.name, path.resolve().parent
        try:
            text = read_text(path, CONFIG)
        except FileNotFoundError:
            raise ConfigurationError(f"no config file at {str(path)!r}") from None
        except OSError as exc:
            raise ConfigurationError(f"cannot read {str(path)!r}: {exc.strerror}") from None
        try:
            raw = load_json(text, where=label, bounds=CONFIG)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                f"{label} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
            ) from None
    if not isinstance(raw, dict):
        raise ConfigurationError(f'{label} must be a JSON object like {{"connectors": [...]}}')
    entries = raw.get("connectors", [])
    if isinstance(entries, list):
        for index, entry in enumerate(entries):
            if isinstance(entry, Mapping):
                check_no_inline_secrets(entry, f"{label}: connectors[{index}]")
    substituted = _substitute(raw, label, ())
    try:
        config = RelayConfig.model_validate(substituted, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise ConfigurationError(_validation_message(label, exc)) from None
    model = config.settings.get("model")
    if model is not None:
        if not isinstance(model, str):
            raise ConfigurationError(f"{label}: settings.model must be a profile string")
        check_profile(model)
    checked = settings_layer(config.settings, where=f"{label}: settings")
    return config.model_copy(update={"base_dir": base_dir, "settings": checked})


def build_connectors(config: RelayConfig) -> list[Connector]:
    """Every connector of ``config``, or none: on a failure the built ones are closed."""
    ids = [spec.id for spec in config.connectors]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ConfigurationError(f"connector ids must be unique; repeated: {duplicates}")
    built: list[Connector] = []
    try:
        for spec in config.connectors:
            try:
                built.append(build_connector(spec))
            except ConfigurationError as exc:
                raise ConfigurationError(f"connector {spec.id!r}: {exc}") from None
    except BaseException:
        for connector in built:
            connector.close()
        raise
    return built


def _substitute(value: Any, label: str, path: tuple[str | int, ...]) -> Any:
    """``${VAR}`` → the variable's value in every string; a missing one fails loudly.

    In a URL's ``user:password@`` and its query the value is percent-encoded: a password
    holding ``/``, ``@`` or ``&`` would otherwise be read as part of the host, the path or
    another option — and an error naming that "host" would show a piece of the password.
    """
    if isinstance(value, str):
        encoded = _encoded_spans(value)

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            found = os.environ.get(name)
            if found is None:
                raise ConfigurationError(
                    f"{label}: {_where(path)} uses ${{{name}}}, but the environment variable "
                    f"{name} is not set; set it (export {name}=… before starting Jupyter, or "
                    f"os.environ[{name!r}] = … before loading the config)"
                )
            key = next((part for part in reversed(path) if isinstance(part, str)), "")
            if found and (_SECRET_NAME.search(name) or is_secret_option(key)):
                register_secret(found)  # a secret by its variable's name or its option's
            if any(start <= match.start() < end for start, end in encoded):
                return quote(found, safe="")
            return found

        return ENV_REFERENCE.sub(replace, value)
    if isinstance(value, list):
        return [_substitute(item, label, (*path, i)) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: _substitute(item, label, (*path, key)) for key, item in value.items()}
    return value


def _encoded_spans(template: str) -> list[tuple[int, int]]:
    """Where a URL template's ``${VAR}`` values must be percent-encoded: the userinfo
    (``scheme://user:${PASSWORD}@host``) and the query (``?password=${PASSWORD}``). Read
    before substitution, so no value can move these boundaries."""
    scheme = template.find("://")
    if scheme < 0:
        return []
    start = scheme + 3
    ends = [i for i in (template.find(c, start) for c in "/?#") if i != -1]
    authority_end = min(ends, default=len(template))
    spans = []
    at = template.rfind("@", start, authority_end)
    if at != -1:
        spans.append((start, at))
    query = template.find("?", start)
    if query != -1:
        spans.append((query, len(template)))
    return spans


def _where(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the top level"


def _validation_message(label: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:_MAX_ERRORS]:
        place = _where(tuple(error["loc"]))
        problems.append(f"{place}: {error['msg']}")
    more = exc.error_count() - len(problems)
    suffix = f" (and {more} more)" if more > 0 else ""
    # a plugin model's message may echo its input: a ${VAR}-substituted secret
    return redact(f"{label} is not a valid relay config: " + "; ".join(problems) + suffix)


def apply_config(engine: Session, config: RelayConfig) -> list[str]:
    """Register ``config``'s connectors, skills and settings in ``engine``; the connector ids.

    Everything that can fail is checked before the session changes: the skills, the
    connectors (built, closed again on any failure) and their tool names."""
    skills = [build_skill(**spec.model_dump()) for spec in config.skills]
    known = set(engine.connectors) | {spec.id for spec in config.connectors}
    for skill in skills:
        missing = [c for c in skill.connectors if c not in known]
        if missing:
            raise ConfigurationError(
                f"skill {skill.name!r} names connector(s) {missing} that neither the config "
                'nor the session has; add them under "connectors" or fix the ids'
            )
        unknown = [t for t in skill.tools if t not in engine.tools]
        if unknown:
            raise ConfigurationError(
                f"skill {skill.name!r} names tool(s) {unknown} that are not registered; "
                "register them with relay.tool(...) before loading the config"
            )
    knowledge = [  # read (and checked) before anything is built
        _knowledge_source(entry.id, config.base_dir, entry.knowledge)
        for entry in config.connectors
        if entry.knowledge
    ]
    connectors = build_connectors(config)
    try:
        _check_new_tool_names(engine, connectors)
        for connector in connectors:
            engine.add_connector(connector, replace=True)
    except BaseException:
        for connector in connectors:
            if engine.connectors.get(connector.id) is not connector:
                connector.close()
        raise
    for source in knowledge:
        engine.resolver.add(source, replace=True)
    for skill in skills:
        engine.add_skill(skill, replace=True)
    if config.settings:
        engine.configure("config", **config.settings)
    if "schema_ttl_s" in config.model_fields_set:
        engine.connectors.schema_ttl_s = config.schema_ttl_s
    return [c.id for c in connectors]


def _knowledge_source(
    connector_id: str, base_dir: Path | None, files: str | list[str]
) -> KnowledgeSource:
    """A connector's knowledge: one file, or several merged (a knowledge file, a dbt
    manifest, a Cortex model), paths relative to the config file."""
    paths = [Path(file).expanduser() for file in ([files] if isinstance(files, str) else files)]
    if base_dir is not None:
        paths = [path if path.is_absolute() else base_dir / path for path in paths]
    try:
        knowledge, path = load_knowledge_with_file(paths)
        return KnowledgeSource(knowledge, connector_id, path=path)
    except ConfigurationError as exc:
        raise ConfigurationError(f"connector {connector_id!r}, knowledge: {exc}") from None


def _check_new_tool_names(engine: Session, connectors: Sequence[Connector]) -> None:
    """Tool names of ``connectors`` clash neither among themselves nor with what stays
    registered (the connectors they replace go, so their names are free)."""
    taken = engine.taken_tool_names(except_connectors={c.id for c in connectors})
    for connector in connectors:
        for tool in connector.tools():
            if tool.name in taken:
                raise ConfigurationError(
                    f"connector {connector.id!r}: a tool named {tool.name!r} is already "
                    "registered (two web-search connectors, or an id clash?)"
                )
            taken.add(tool.name)


def build_skill(name: str, **fields: Any) -> Skill:
    """A checked ``Skill`` from ``relay.skill``'s keywords or a config file's entry (its
    fields are :class:`~relay_nb.agent.skills.Skill`'s); without a description, the
    prompt's first line is one. A bad field is a one-line ConfigurationError, not a
    traceback."""
    prompt = fields.get("prompt")
    first_line = prompt.strip().splitlines()[0][:200] if prompt and prompt.strip() else ""
    fields["description"] = fields.get("description") or first_line or name
    for listed in ("connectors", "tools", "examples"):
        if listed in fields:
            fields[listed] = tuple(fields[listed])
    try:
        return Skill(name=name, **fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'skill'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigurationError(f"skill {name!r}: {problems}") from None
