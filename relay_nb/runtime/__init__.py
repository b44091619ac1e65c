"""Model-invocation portability ("Relay"): one request/result contract for every runtime.

Nothing here knows about agents, connectors or notebooks. Heavy provider SDKs are imported
only by the runtime that needs them, when it first invokes.
"""

from relay_nb.errors import InvocationError, ModelRequestsBlocked
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.base import BaseRuntime, BatchModelRuntime, ModelRuntime
from relay_nb.runtime.failures import classify_exception, classify_status
from relay_nb.runtime.switch import (
    allow_model_requests,
    model_request_scope,
    set_model_request_scope,
)
from relay_nb.runtime.types import (
    BatchFailure,
    BatchOutcome,
    Capabilities,
    InvocationRequest,
    InvocationResult,
    Message,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
    Usage,
)

__all__ = [
    "AbortSignal",
    "BaseRuntime",
    "BatchFailure",
    "BatchModelRuntime",
    "BatchOutcome",
    "Capabilities",
    "InvocationError",
    "InvocationRequest",
    "InvocationResult",
    "Message",
    "ModelRequestsBlocked",
    "ModelRuntime",
    "TextPart",
    "ToolCall",
    "ToolCallPart",
    "ToolChoice",
    "ToolResultPart",
    "ToolSpec",
    "Usage",
    "allow_model_requests",
    "classify_exception",
    "classify_status",
    "model_request_scope",
    "set_model_request_scope",
]
