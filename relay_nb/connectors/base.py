"""The connector contract: every data system contributes tools and prompt context.

The agent loop never branches on a connector's kind; it asks each connector the skill
names for its tools (``query_<id>``, ``describe_<id>``, ``call_<id>``…) and for the text that
tells the model what is queryable.
"""

from __future__ import annotations

import functools
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from relay_nb.errors import ConfigurationError
from relay_nb.redaction import redact
from relay_nb.tools import Tool

__all__ = ["CONNECTOR_ID", "Connector", "ConnectorDocument", "check_connector_id"]

CONNECTOR_ID = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def check_connector_id(connector_id: str) -> str:
    """Ids become tool names (``query_<id>``), so they must be short snake_case."""
    if not isinstance(connector_id, str) or not CONNECTOR_ID.match(connector_id):
        raise ConfigurationError(
            f"connector id {connector_id!r} must be snake_case: a lowercase letter, then up to "
            "39 lowercase letters, digits or underscores (e.g. 'shop' or 'sales_2026')"
        )
    return connector_id


@dataclass(frozen=True)
class ConnectorDocument:
    """A text a connector's system publishes for the model to read (an MCP server's
    resources): neutral, so the context layer can rank it without knowing the connector."""

    title: str
    text: str
    uri: str = ""
    """Where it came from, for people (never a secret)."""


class Connector(ABC):
    """One registered data system. Subclasses set ``id``, ``kind``, ``name``, ``description``
    and ``target``.

    Required: :meth:`tools` and :meth:`prompt_context`. The rest have working defaults and
    serve the registry: ``target`` and :meth:`object_names` fill the ``%relay --connectors``
    table, :meth:`documents` feeds reference texts to the context layer, :meth:`refresh`
    drops cached schema when its TTL expires or the analyst asks, :meth:`close` runs on
    removal and at kernel shutdown.
    """

    id: str
    kind: str
    name: str
    description: str | None = None
    target: str = ""
    """Where it points, for people: a URL with any password masked, never a secret."""
    tools_version: int = 0
    """Optional: a connector whose tool list can change on its own (an MCP server re-listed
    in the background) bumps this when it does; the registry rebuilds the tools it cached
    for the connector when the number differs. Others leave it at 0."""

    @abstractmethod
    def tools(self) -> list[Tool]:
        """The tools the model may call on this system."""

    @abstractmethod
    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        """What is queryable, compact enough for a system prompt; ranked by ``question``
        and cut to ``max_tokens`` when both are given. Whatever a subclass returns is
        redacted (see :meth:`__init_subclass__`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every connector's ``prompt_context`` comes back with known secrets redacted.

        Its text is data someone else wrote — table and column names, comments, sample
        values, field names, a server's instructions — printed by the analyst or sent to the
        model; wrapping it here covers built-ins and plugins alike, in one place.
        """
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("prompt_context")
        if own is None or getattr(own, "_relay_redacted", False):
            return

        @functools.wraps(own)
        def prompt_context(self: Connector, *args: Any, **options: Any) -> str:
            return redact(own(self, *args, **options))

        prompt_context._relay_redacted = True  # type: ignore[attr-defined]
        cls.prompt_context = prompt_context  # type: ignore[method-assign]

    def object_names(self) -> list[str]:
        """What the model can query here (tables, collections, endpoints); may read the
        schema, so it can raise when the system is unreachable."""
        return []

    def documents(self) -> list[ConnectorDocument]:
        """Reference texts the system offers beyond its schema (default: none).

        Read by the context layer's documents source, which ranks them by the question into
        the prompt; may be a round trip, so it runs in a worker thread under a timeout.
        Connectors cache what they read here until :meth:`refresh`.
        """
        return []

    def refresh(self) -> None:  # noqa: B027 - connectors without a schema cache need not override
        """Read the schema again now (or forget it, for connectors that read lazily)."""

    def invalidate(self) -> None:
        """Forget cached schema without reading it (the registry's TTL expiry: the next
        prompt reads it under the context source's timeout, never blocking a turn here)."""
        self.refresh()

    @property
    def context_ready(self) -> bool:
        """True when :meth:`prompt_context` needs no I/O and well under a millisecond: the
        schema source then calls it on the event loop, sparing a thread hop (~0.2 ms, and a
        wait behind the queries ``ask_many`` keeps the executor busy with)."""
        return False

    #: True when :meth:`refresh_if_changed` can tell cheaply whether the schema moved; the
    #: registry then checks an expired schema in the background instead of forgetting it.
    detects_changes: bool = False

    def refresh_if_changed(self, *, force: bool = False) -> bool:
        """Re-read the schema only if it changed (always with ``force``); True if it did.
        Without a cheap check (``detects_changes`` False) this is a full :meth:`refresh`."""
        self.refresh()
        return True

    def close(self) -> None:  # noqa: B027 - connectors without resources need not override
        """Release pools, sockets and file handles."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id!r}>"
