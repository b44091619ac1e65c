"""A real ipykernel driven over its ZMQ channels as a frontend drives it: the kernel tests'
shared client (approval, background runs, ``%%relay_sql``)."""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class Kernel:
    """A kernel and a client; iopub messages grouped by the request they answer."""

    def __init__(self) -> None:
        from jupyter_client.manager import start_new_kernel

        env = {**os.environ, "RELAY_MODEL_REQUESTS": "none"}
        self.manager, self.client = start_new_kernel(
            startup_timeout=300, kernel_name="python3", env=env
        )

    def execute(self, code: str, *, allow_stdin: bool = True) -> str:
        return self.client.execute(code, allow_stdin=allow_stdin)

    def until_idle(
        self, msg_id: str, on: Callable[[dict[str, Any]], None] = lambda m: None
    ) -> list[dict[str, Any]]:
        """Every iopub message until ``msg_id``'s cell is idle (``on`` sees each one)."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                message = self.client.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                continue
            seen.append(message)
            on(message)
            if (
                message["msg_type"] == "status"
                and message["content"]["execution_state"] == "idle"
                and message["parent_header"].get("msg_id") == msg_id
            ):
                return seen
        raise AssertionError(f"cell {msg_id} did not finish: {[m['msg_type'] for m in seen]}")

    def reply(self, msg_id: str) -> dict[str, Any]:
        """The shell reply (``execute_reply`` …) to ``msg_id``."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                message = self.client.get_shell_msg(timeout=0.5)
            except queue.Empty:
                continue
            if message["parent_header"].get("msg_id") == msg_id:
                return message["content"]
        raise AssertionError(f"no reply to {msg_id}")

    def click(self, comm_id: str) -> None:
        """What ipywidgets' frontend sends for a Button click."""
        content = {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}}
        self.client.shell_channel.send(self.client.session.msg("comm_msg", content))

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@contextmanager
def running(setup: str) -> Iterator[Kernel]:
    """A fresh kernel that has run ``setup``; shut down afterwards."""
    kernel = Kernel()
    try:
        kernel.until_idle(kernel.execute(setup))
        yield kernel
    finally:
        kernel.close()


def of(messages: list[dict[str, Any]], msg_id: str, kind: str) -> list[dict[str, Any]]:
    return [
        m["content"]
        for m in messages
        if m["msg_type"] == kind and m["parent_header"].get("msg_id") == msg_id
    ]


def texts(messages: list[dict[str, Any]], msg_id: str) -> str:
    parts = [c["text"] for c in of(messages, msg_id, "stream")]
    for kind in ("display_data", "update_display_data", "execute_result"):
        parts += [c["data"].get("text/plain", "") for c in of(messages, msg_id, kind)]
    return "\n".join(parts)
