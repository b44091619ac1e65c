"""``OpenAICompatibleRuntime``: one invocation is one Chat Completions request (official SDK).

Any Chat Completions endpoint works through ``base_url``: OpenAI itself, or a local Ollama,
vLLM, llama.cpp or LM Studio server. This module is the only place in the library that
imports ``openai`` (install it with ``pip install 'relay-nb[openai]'``), and it does so inside
functions, in a worker thread the first time, so ``import relay_nb`` never pays for it.

As :class:`~relay_nb.runtime.anthropic.AnthropicRuntime`, the runtime stays thin: the wire
mapping is in :mod:`relay_nb.runtime.openai_mapping`, SDK exceptions escape to
:meth:`BaseRuntime.invoke`, which classifies them with the table every HTTP runtime uses,
and the SDK's own retries are off (``max_retries=0``): retrying belongs to the caller.

Credentials: ``OPENAI_API_KEY`` is read (at invoke time) only for OpenAI's own API; another
server gets a key only when it is given one (``api_key=``, or ``api_key_env=`` naming the
variable that holds it), so a notebook never sends its OpenAI key to a server it merely
points at. Without a key no ``Authorization`` header is sent, as local servers expect.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import time
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl, urlsplit

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.redaction import Secret, register_secret
from relay_nb.runtime.base import BaseRuntime, TextCallback
from relay_nb.runtime.client_slot import ClientSlot
from relay_nb.runtime.failures import classify_status
from relay_nb.runtime.openai_mapping import (
    MaxTokensParam,
    RawReply,
    StreamAccumulator,
    StructuredOutput,
    build_params,
    reply_from_completion,
    to_result,
)
from relay_nb.runtime.switch import check_model_request
from relay_nb.runtime.types import Capabilities, InvocationRequest, InvocationResult

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "OPENAI_BASE_URL",
    "OpenAICompatibleRuntime",
    "compatible_runtime_from_profile",
    "openai_runtime_from_profile",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
_OPENAI_HOST = "api.openai.com"
_AUTO: Final = "auto"
_NO_KEY_PLACEHOLDER = "relay-nb-no-key"
"""Given to the SDK (which insists on a key) when none is configured; the Authorization
header is then omitted from every request, so this string never leaves the process."""
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")  # used with fullmatch
_STRUCTURED_OUTPUTS = ("json_object", "json_schema", "prompt")
_MAX_TOKENS_PARAMS = ("max_tokens", "max_completion_tokens")


_sdk_imported = False


async def _import_sdk() -> None:
    """Import ``openai`` in a worker thread the first time (it takes most of a second; on
    the event loop it would freeze a notebook's widgets and delay timeouts and aborts)."""
    global _sdk_imported
    if not _sdk_imported:
        await asyncio.to_thread(importlib.import_module, "openai")
        _sdk_imported = True


def _is_openai(url: str) -> bool:
    return (urlsplit(url).hostname or "").lower() == _OPENAI_HOST


def _checked_base_url(url: str) -> str:
    """A base URL the SDK can append ``/chat/completions`` to, without credentials in it."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"base_url {url!r} is not an http(s) URL; use e.g. http://127.0.0.1:11434/v1"
        )
    if parts.username is not None or parts.password is not None:
        raise ConfigurationError(
            "base_url must not carry credentials; put the key in an environment variable "
            "and name it with api_key_env= (key_env= in a profile string)"
        )
    if parts.query or parts.fragment:
        raise ConfigurationError(
            f"base_url {parts.scheme}://{parts.netloc}{parts.path} must not have a query or "
            "fragment (the SDK appends /chat/completions to it)"
        )
    return f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")


class OpenAICompatibleRuntime(BaseRuntime):
    """The Chat Completions API of OpenAI or of any compatible server, as a ModelRuntime.

    - ``base_url``: the server's API root including its prefix, e.g.
      ``http://127.0.0.1:11434/v1`` for Ollama; default ``OPENAI_BASE_URL`` or OpenAI's API.
    - ``api_key`` / ``api_key_env``: see the module docstring. ``api_key_env="auto"`` means
      ``OPENAI_API_KEY`` for OpenAI's API (and for the URL in ``OPENAI_BASE_URL``), none for
      an explicit ``base_url`` elsewhere; ``None`` means "this server needs no key".
    - ``tools=False``: the model or server has no function calling. Capabilities then say
      ``single_forced_tool_only`` and the agent loop drives the model through one forced
      ``next_step`` tool, answered as a JSON object (``structured_output``: ``json_object``
      mode (default), ``json_schema`` (a server-enforced schema, declared "native"), or
      ``prompt`` (the schema in the prompt only, for servers with neither)).
    - ``stream``: stream text deltas when the caller asks for them (``on_text``).
    - ``max_tokens_param``: which request field carries the output limit; default
      ``max_completion_tokens`` for OpenAI (its newer models refuse ``max_tokens``) and
      ``max_tokens`` elsewhere (what local servers understand).
    - ``timeout``: the SDK's HTTP timeout (connect, and each read and write); default 120 s
      for OpenAI and 600 s elsewhere (a local model on a CPU can take minutes to answer).
      A wall-clock limit for a whole invocation is ``invoke(timeout=...)``.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        api_key_env: str | None = _AUTO,
        tools: bool = True,
        structured_output: StructuredOutput = "json_object",
        stream: bool = True,
        max_tokens_param: MaxTokensParam | None = None,
        timeout: float | None = None,
        max_retries: int = 0,
        default_max_output_tokens: int = 4096,
    ) -> None:
        if not isinstance(model, str) or not model.strip() or any(c.isspace() for c in model):
            raise ConfigurationError(f"model {model!r} must be a non-empty name without spaces")
        if structured_output not in _STRUCTURED_OUTPUTS:
            raise ConfigurationError(
                f"structured_output must be one of {', '.join(_STRUCTURED_OUTPUTS)}"
            )
        if max_tokens_param is not None and max_tokens_param not in _MAX_TOKENS_PARAMS:
            raise ConfigurationError(
                f"max_tokens_param must be one of {', '.join(_MAX_TOKENS_PARAMS)}"
            )
        self.model = model
        self._base_url = _checked_base_url(base_url) if base_url is not None else None
        self.compatible = self._base_url is not None and not _is_openai(self._base_url)
        self.provider = "openai-compatible" if self.compatible else "openai"
        self.id = f"openai:{model}"
        if self.compatible:
            self.id = f"openai-compatible:{model}@{self._base_url}"
        if (
            api_key_env is not None
            and api_key_env != _AUTO
            and not _ENV_NAME.fullmatch(api_key_env)
        ):
            # never echoed: a key pasted here by mistake must not land in an error message
            raise ConfigurationError(
                "api_key_env (key_env= in a profile) must name an environment variable in "
                "capitals, e.g. VLLM_API_KEY, not hold the key itself"
            )
        if find_spec("openai") is None:
            raise ConfigurationError(
                "the openai package is not installed; install it with "
                "pip install 'relay-nb[openai]'"
            )
        if isinstance(api_key, Secret):
            register_secret(api_key.reveal())  # scrubbed from recordings and messages too
        elif isinstance(api_key, str):
            register_secret(api_key)  # so recordings and messages scrub it like env keys
            api_key = Secret(api_key) if api_key else None
        self._api_key = api_key
        if api_key_env == _AUTO:
            api_key_env = None if self.compatible else "OPENAI_API_KEY"
        self.api_key_env = api_key_env
        self.tools = tools
        self.structured_output: StructuredOutput = structured_output
        self.stream = stream
        self.max_tokens_param: MaxTokensParam | None = max_tokens_param
        self.timeout = timeout if timeout is not None else (600.0 if self.compatible else 120.0)
        self.max_retries = max_retries
        self.default_max_output_tokens = default_max_output_tokens
        self._slot: ClientSlot[AsyncOpenAI] | None = None

    # -- ModelRuntime ----------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        native = self.tools or self.structured_output == "json_schema"
        return Capabilities(
            structured_tools=True,
            structured_tools_fidelity="native" if native else "prompted",
            streaming=self.stream,
            abort=True,
            usage=True,
            output_token_limit_fidelity="native",
            physical_batch=False,
            single_forced_tool_only=not self.tools,
        )

    @property
    def base_url(self) -> str:
        """Where requests go: the constructor's URL, else ``OPENAI_BASE_URL``, else OpenAI."""
        if self._base_url is not None:
            return self._base_url
        from_env = os.environ.get("OPENAI_BASE_URL")
        return _checked_base_url(from_env) if from_env else OPENAI_BASE_URL

    def _check_allowed(self) -> None:
        check_model_request(self.id, url=self.base_url)

    async def _invoke(
        self, request: InvocationRequest, *, on_text: TextCallback | None
    ) -> InvocationResult:
        client, keyless = await self._client()
        params, forced = build_params(
            request,
            model=self.model,
            native_tools=self.tools,
            structured_output=self.structured_output,
            max_tokens_param=self._max_tokens_param(),
            default_max_output_tokens=self.default_max_output_tokens,
            label=self.id,
        )
        # no key: no Authorization header; another server: not the OpenAI account's ids either
        omitted = ["Authorization"] if keyless else []
        if self.compatible:
            omitted += ["OpenAI-Organization", "OpenAI-Project"]
        if omitted:
            from openai import Omit

            params["extra_headers"] = {name: Omit() for name in omitted}
        started = time.perf_counter()
        # a forced prompted tool's text is JSON for the tool, not an answer to stream
        streaming = self.stream and forced is None
        try:
            if streaming and on_text is not None:
                reply = await self._stream(client, params, on_text)
            else:
                completion = await client.chat.completions.create(**params)
                reply = reply_from_completion(completion, provider=self.provider)
        except Exception as exc:
            raise self._translated(exc) from None
        latency_ms = (time.perf_counter() - started) * 1000
        return to_result(
            reply,
            provider=self.provider,
            configured_model=self.model,
            forced=forced,
            declared={tool.name for tool in request.tools},
            latency_ms=latency_ms,
        )

    async def aclose(self) -> None:
        """Close the HTTP client; the next invoke opens a new one. Safe to call twice."""
        slot, self._slot = self._slot, None
        if slot is not None:
            await slot.close()

    # -- streaming and failures ------------------------------------------------------------

    async def _stream(
        self, client: AsyncOpenAI, params: dict[str, Any], on_text: TextCallback
    ) -> RawReply:
        """Run the request as an SSE stream, feeding text deltas to ``on_text`` as they come."""
        accumulator = StreamAccumulator(on_text)
        stream = await client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        async with stream:
            async for chunk in stream:
                accumulator.feed(chunk)
        if not accumulator.finished:
            raise InvocationError(
                "PROVIDER_UNAVAILABLE",
                f"the {self.provider} response stream ended before the reply was complete",
                True,
            )
        return accumulator.result()

    def _translated(self, exc: Exception) -> Exception:
        """The few SDK failures the status table alone would misread; others pass through.

        An ``{"error": ...}`` chunk mid-stream comes without a status of its own, and a 404
        from a compatible server most often means a base URL without its ``/v1`` prefix.
        """
        from openai import APIConnectionError, APIError, APIStatusError

        if isinstance(exc, APIStatusError) and exc.status_code == 404:
            return InvocationError(
                "INVALID_REQUEST",
                f"{self.provider} answered HTTP 404; check the model name and that base_url "
                "includes the API prefix (usually /v1, e.g. http://127.0.0.1:11434/v1)",
                False,
            )
        if isinstance(exc, APIError) and not isinstance(exc, APIStatusError | APIConnectionError):
            return _mid_stream_error(exc, provider=self.provider)
        return exc

    # -- request details -------------------------------------------------------------------

    def _max_tokens_param(self) -> MaxTokensParam:
        if self.max_tokens_param is not None:
            return self.max_tokens_param
        return "max_completion_tokens" if _is_openai(self.base_url) else "max_tokens"

    # -- client per event loop -------------------------------------------------------------

    async def _client(self) -> tuple[AsyncOpenAI, bool]:
        """The client for the running loop, key and base URL (rebuilt when one changed), and
        whether it has no key."""
        key = self._resolve_key()
        await _import_sdk()
        self._slot = await ClientSlot.current(
            self._slot, self.id, key, self.base_url, self._new_client
        )
        return self._slot.client, key is None

    def _resolve_key(self) -> Secret | None:
        """The constructor's key, else the named variable's (read now, so a rotated key is
        picked up), else none: a server that needs no key gets no Authorization header."""
        if self._api_key is not None:
            return self._api_key
        if self.api_key_env is None:
            return None
        from_env = os.environ.get(self.api_key_env)
        if not from_env:
            raise InvocationError(
                "AUTHENTICATION_FAILED",
                f"no API key for {self.id}; set {self.api_key_env} or pass api_key= "
                "(api_key_env=None for a server that needs none)",
                False,
            )
        register_secret(from_env)  # a custom variable name may not look secret to redaction
        return Secret(from_env)

    def _new_client(self, key: Secret | None, base_url: str) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            api_key=key.reveal() if key is not None else _NO_KEY_PLACEHOLDER,
            base_url=base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )


# Error types (or numeric codes) a server can send in an SSE ``{"error": ...}`` chunk after a
# 200 response has started; mapped to the status the same error has on a plain request.
_ERROR_TYPE_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "BadRequestError": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "NotFoundError": 404,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "server_error": 500,
    "InternalServerError": 500,
    "service_unavailable": 503,
    "overloaded_error": 529,
    "timeout": 504,
}


def _mid_stream_error(error: Any, *, provider: str) -> InvocationError:
    """Classify an ``{"error": ...}`` chunk, which arrives after the stream's HTTP 200.

    The error's numeric code or type is mapped to the status the same error has before a
    stream starts; only a status number or a type from the fixed table is named.
    """
    body = getattr(error, "body", None)
    body = body if isinstance(body, dict) else {}
    status: int | None = None
    code = body.get("code")
    if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599:
        status = code
    elif isinstance(code, str) and code.isdigit() and 100 <= int(code) <= 599:
        status = int(code)
    error_type = body.get("type")
    named = error_type if isinstance(error_type, str) and error_type in _ERROR_TYPE_STATUS else None
    if status is None and named is not None:
        status = _ERROR_TYPE_STATUS[named]
    if status is None:
        return InvocationError(
            "RUNTIME_FAILURE", f"{provider} reported an unrecognised error mid-stream", False
        )
    error_code, retryable = classify_status(status)
    hint = "try again shortly" if retryable else "the reply was not completed"
    what = named or f"HTTP {status}"
    return InvocationError(error_code, f"{provider} reported {what} mid-stream; {hint}", retryable)


# ------------------------------------------------------------------------------ profiles

_PROFILE_OPTIONS: dict[str, str] = {
    "tools": "tools",
    "stream": "stream",
    "structured_output": "structured_output",
    "key_env": "api_key_env",
    "max_tokens_param": "max_tokens_param",
    "timeout": "timeout",
    "max_retries": "max_retries",
}
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
COMPATIBLE_FORM = (
    "openai-compatible:MODEL@URL[?tools=false&stream=false&key_env=VAR...], e.g. "
    "openai-compatible:llama3.2@http://127.0.0.1:11434/v1"
)


def openai_runtime_from_profile(value: str, options: dict[str, Any]) -> OpenAICompatibleRuntime:
    """``openai:MODEL``: OpenAI's API (or ``OPENAI_BASE_URL``), key from ``OPENAI_API_KEY``."""
    return OpenAICompatibleRuntime(value, **options)


def compatible_runtime_from_profile(value: str, options: dict[str, Any]) -> OpenAICompatibleRuntime:
    """``openai-compatible:MODEL@URL?opt=value&...``; options also come as keyword options.

    Options ride in the URL's query (which the SDK could not use anyway) so a ``%relay
    --model`` line or ``RELAY_MODEL`` can carry them. A key never does: name its variable.
    """
    at = min(
        (i for i in (value.lower().find("@http://"), value.lower().find("@https://")) if i >= 0),
        default=-1,
    )
    if at <= 0:
        raise ConfigurationError(
            f"model profile 'openai-compatible:{value}' has no @URL; use {COMPATIBLE_FORM}"
        )
    model, url = value[:at], value[at + 1 :]
    url, _, query = url.partition("?")
    from_query = _profile_options(query)
    clash = sorted(set(from_query) & set(options))
    if clash:
        raise ConfigurationError(f"option {', '.join(clash)} is given twice (profile and keyword)")
    return OpenAICompatibleRuntime(model, base_url=url, **from_query, **options)


def _profile_options(query: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ConfigurationError(
            f"the profile options {query!r} are not name=value pairs joined by &"
        ) from None
    for name, raw in pairs:
        if name not in _PROFILE_OPTIONS:
            hint = "; name the variable holding it with key_env=VAR" if "key" in name else ""
            raise ConfigurationError(
                f"unknown openai-compatible profile option {name!r}{hint}; known options: "
                f"{', '.join(_PROFILE_OPTIONS)}"
            )
        options[_PROFILE_OPTIONS[name]] = _option_value(name, raw.strip())
    return options


def _option_value(name: str, raw: str) -> Any:
    if name in ("tools", "stream"):
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise ConfigurationError(f"profile option {name}={raw!r} must be true or false")
    if name == "timeout":
        try:
            return float(raw)
        except ValueError:
            raise ConfigurationError(f"profile option timeout={raw!r} must be seconds") from None
    if name == "max_retries":
        if not raw.isdigit():
            raise ConfigurationError(f"profile option max_retries={raw!r} must be a whole number")
        return int(raw)
    return raw
