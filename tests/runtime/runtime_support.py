"""Helpers the runtime test modules share: a one-message request, an expected failure, and
the check that a failure carries neither the provider's text nor the key."""

from __future__ import annotations

import traceback
from typing import Any

import pytest

from relay_nb.errors import InvocationError
from relay_nb.runtime.types import InvocationRequest, Message

LEAKED_WORDS = ("secret_column", "provider says")
"""What the stubs' leaky error bodies hold; none of it may reach a message."""


def ask(text: str = "What is 6 x 7?", **fields: Any) -> InvocationRequest:
    """One user message, with any other request fields."""
    return InvocationRequest(messages=[Message.user(text)], **fields)


async def failure(
    runtime: Any, request: InvocationRequest | None = None, **kwargs: Any
) -> InvocationError:
    """The InvocationError ``runtime.invoke`` raises (the test fails if it does not)."""
    with pytest.raises(InvocationError) as caught:
        await runtime.invoke(request or ask(), **kwargs)
    return caught.value


def assert_content_free(shown: BaseException | str, *secrets: str) -> None:
    """Neither the provider's body nor ``secrets`` (the key) in what a user could print:
    an exception's message, repr and traceback, or a text."""
    if isinstance(shown, BaseException):
        shown = str(shown) + repr(shown) + "".join(traceback.format_exception(shown))
    for word in (*LEAKED_WORDS, *secrets):
        assert word not in shown
