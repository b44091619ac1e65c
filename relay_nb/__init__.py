"""relay_nb: ask your data in plain language from Jupyter.

Names are loaded lazily on first access so ``import relay_nb`` stays fast: pydantic, the
provider SDKs and database drivers load only when something needs them.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from relay_nb._lazy import lazy_exports

__version__ = "0.1.0"

# A library does not decide where its log records go (the logging HOWTO's advice): without
# this, Python's last-resort handler prints each WARNING record raw to stderr — a failed
# context source's ``context_source_failed source=… status=…`` under a notebook cell — when
# the turn already says the same in its warnings. An application that configures logging
# still gets every record.
logging.getLogger("relay_nb").addHandler(logging.NullHandler())

if "IPython" in sys.modules:  # in a notebook: a TurnResult shows as its trace
    from relay_nb.notebook import show_turns_as_traces

    show_turns_as_traces()

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "RelayError": "relay_nb.errors",
    "Cancelled": "relay_nb.errors",
    "ConfigurationError": "relay_nb.errors",
    "InvocationError": "relay_nb.errors",
    "ModelRequestsBlocked": "relay_nb.errors",
    # runtime contract
    "AbortSignal": "relay_nb.runtime.abort",
    "BaseRuntime": "relay_nb.runtime.base",
    "ModelRuntime": "relay_nb.runtime.base",
    "BatchOutcome": "relay_nb.runtime.types",
    "Capabilities": "relay_nb.runtime.types",
    "InvocationRequest": "relay_nb.runtime.types",
    "InvocationResult": "relay_nb.runtime.types",
    "Message": "relay_nb.runtime.types",
    "ToolCall": "relay_nb.runtime.types",
    "ToolChoice": "relay_nb.runtime.types",
    "ToolSpec": "relay_nb.runtime.types",
    "Usage": "relay_nb.runtime.types",
    # runtimes
    "AnthropicRuntime": "relay_nb.runtime.anthropic",
    "ClaudeCodeRuntime": "relay_nb.runtime.claude_code",
    "CodexCLIRuntime": "relay_nb.runtime.codex_cli",
    "OpenCodeCLIRuntime": "relay_nb.runtime.opencode_cli",
    "OpenAICompatibleRuntime": "relay_nb.runtime.openai_compat",
    "ScriptedRuntime": "relay_nb.runtime.scripted",
    "RecordingRuntime": "relay_nb.runtime.replay",
    "ReplayRuntime": "relay_nb.runtime.replay",
    "runtime_from_profile": "relay_nb.runtime.profiles",
    "check_runtime_conformance": "relay_nb.runtime.conformance",
    "check_batch_conformance": "relay_nb.runtime.conformance",
    "allow_model_requests": "relay_nb.runtime.switch",
    # connectors
    "Connector": "relay_nb.connectors.base",
    "SQLConnector": "relay_nb.connectors.sql.connector",
    "DataFrameConnector": "relay_nb.connectors.dataframe",
    "HTTPConnector": "relay_nb.connectors.http",
    "HTTPAuth": "relay_nb.connectors.http",
    "MongoConnector": "relay_nb.connectors.mongo",
    "MCP": "relay_nb.connectors.mcp",
    "MCPConnector": "relay_nb.connectors.mcp",
    "WebSearchConnector": "relay_nb.connectors.websearch",
    "QueryResult": "relay_nb.connectors.results",
    "ConnectorType": "relay_nb.connectors.types",
    "ConnectorTypeInfo": "relay_nb.connectors.plugins",
    "ConnectorPluginWarning": "relay_nb.connectors.plugins",
    "connector_types": "relay_nb.connectors.plugins",
    "register_connector_type": "relay_nb.connectors.plugins",
    "unregister_connector_type": "relay_nb.connectors.plugins",
    "Tool": "relay_nb.tools",
    "ToolResult": "relay_nb.tools",
    "ConnectorError": "relay_nb.errors",
    "UnsafeQueryError": "relay_nb.errors",
    "QueryExecutionError": "relay_nb.errors",
    "QueryTimeoutError": "relay_nb.errors",
    # evaluation
    "EvalReport": "relay_nb.eval",
    "load_bank": "relay_nb.eval",
    # knowledge
    "Knowledge": "relay_nb.knowledge",
    "VerifiedQuery": "relay_nb.knowledge",
    "load_knowledge": "relay_nb.knowledge",
    # the facade
    "Relay": "relay_nb.facade.relay",
    "Turn": "relay_nb.facade.relay",
    "default_relay": "relay_nb.facade.default",
    "session": "relay_nb.facade.default",
    # agent
    "Accountant": "relay_nb.agent.accounting",
    "Skill": "relay_nb.agent.skills",
    "TurnServices": "relay_nb.agent.services",
    "TurnSettings": "relay_nb.agent.settings",
    "TurnResult": "relay_nb.agent.loop",
    "run_turn": "relay_nb.agent.loop",
    "UsageCaps": "relay_nb.agent.caps",
    "ApprovalRequest": "relay_nb.agent.approval",
    "ClarifyRequest": "relay_nb.agent.clarify",
    "PriceTable": "relay_nb.agent.pricing",
    "UsageLedger": "relay_nb.agent.ledger",
}

__all__ = [
    "AbortSignal",
    "Accountant",
    "AnthropicRuntime",
    "ApprovalRequest",
    "BaseRuntime",
    "BatchOutcome",
    "Cancelled",
    "Capabilities",
    "ClarifyRequest",
    "ClaudeCodeRuntime",
    "CodexCLIRuntime",
    "ConfigurationError",
    "Connector",
    "ConnectorError",
    "ConnectorPluginWarning",
    "ConnectorType",
    "ConnectorTypeInfo",
    "DataFrameConnector",
    "EvalReport",
    "HTTPAuth",
    "HTTPConnector",
    "InvocationError",
    "InvocationRequest",
    "InvocationResult",
    "Knowledge",
    "MCP",
    "MCPConnector",
    "Message",
    "ModelRequestsBlocked",
    "ModelRuntime",
    "MongoConnector",
    "OpenAICompatibleRuntime",
    "OpenCodeCLIRuntime",
    "PriceTable",
    "QueryExecutionError",
    "QueryResult",
    "QueryTimeoutError",
    "RecordingRuntime",
    "Relay",
    "RelayError",
    "ReplayRuntime",
    "SQLConnector",
    "ScriptedRuntime",
    "Skill",
    "Tool",
    "ToolCall",
    "ToolChoice",
    "ToolResult",
    "ToolSpec",
    "Turn",
    "TurnResult",
    "TurnServices",
    "TurnSettings",
    "UnsafeQueryError",
    "Usage",
    "UsageCaps",
    "UsageLedger",
    "VerifiedQuery",
    "WebSearchConnector",
    "allow_model_requests",
    "check_batch_conformance",
    "check_runtime_conformance",
    "connector_types",
    "default_relay",
    "load_bank",
    "load_knowledge",
    "register_connector_type",
    "run_turn",
    "runtime_from_profile",
    "session",
    "unregister_connector_type",
]


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext relay_nb``: register the ``%relay`` magics (see relay_nb.notebook)."""
    from relay_nb.notebook import load_ipython_extension as load

    load(shell)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:  # let type checkers and IDEs see the real names
    from relay_nb.agent.accounting import Accountant
    from relay_nb.agent.approval import ApprovalRequest
    from relay_nb.agent.caps import UsageCaps
    from relay_nb.agent.clarify import ClarifyRequest
    from relay_nb.agent.ledger import UsageLedger
    from relay_nb.agent.loop import TurnResult, run_turn
    from relay_nb.agent.pricing import PriceTable
    from relay_nb.agent.services import TurnServices
    from relay_nb.agent.settings import TurnSettings
    from relay_nb.agent.skills import Skill
    from relay_nb.connectors.base import Connector
    from relay_nb.connectors.dataframe import DataFrameConnector
    from relay_nb.connectors.http import HTTPAuth, HTTPConnector
    from relay_nb.connectors.mcp import MCP, MCPConnector
    from relay_nb.connectors.mongo import MongoConnector
    from relay_nb.connectors.plugins import (
        ConnectorPluginWarning,
        ConnectorTypeInfo,
        connector_types,
        register_connector_type,
        unregister_connector_type,
    )
    from relay_nb.connectors.results import QueryResult
    from relay_nb.connectors.sql.connector import SQLConnector
    from relay_nb.connectors.types import ConnectorType
    from relay_nb.connectors.websearch import WebSearchConnector
    from relay_nb.errors import (
        Cancelled,
        ConfigurationError,
        ConnectorError,
        InvocationError,
        ModelRequestsBlocked,
        QueryExecutionError,
        QueryTimeoutError,
        RelayError,
        UnsafeQueryError,
    )
    from relay_nb.eval import EvalReport, load_bank
    from relay_nb.facade.default import default_relay, session
    from relay_nb.facade.relay import Relay, Turn
    from relay_nb.knowledge import Knowledge, VerifiedQuery, load_knowledge
    from relay_nb.runtime.abort import AbortSignal
    from relay_nb.runtime.anthropic import AnthropicRuntime
    from relay_nb.runtime.base import BaseRuntime, ModelRuntime
    from relay_nb.runtime.claude_code import ClaudeCodeRuntime
    from relay_nb.runtime.codex_cli import CodexCLIRuntime
    from relay_nb.runtime.conformance import check_batch_conformance, check_runtime_conformance
    from relay_nb.runtime.openai_compat import OpenAICompatibleRuntime
    from relay_nb.runtime.opencode_cli import OpenCodeCLIRuntime
    from relay_nb.runtime.profiles import runtime_from_profile
    from relay_nb.runtime.replay import RecordingRuntime, ReplayRuntime
    from relay_nb.runtime.scripted import ScriptedRuntime
    from relay_nb.runtime.switch import allow_model_requests
    from relay_nb.runtime.types import (
        BatchOutcome,
        Capabilities,
        InvocationRequest,
        InvocationResult,
        Message,
        ToolCall,
        ToolChoice,
        ToolSpec,
        Usage,
    )
    from relay_nb.tools import Tool, ToolResult
