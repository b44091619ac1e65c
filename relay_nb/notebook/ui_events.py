"""Widget clicks while a cell blocks: handling the kernel's pending comm messages (ipykernel 7).

A click on an ipywidgets button reaches the kernel as a ``comm_msg`` on the shell channel, and
ipykernel handles shell messages on the event loop of the thread that runs cells. While a cell
blocks — the ``%relay`` cell waiting for an Approve / Deny click — that loop does not run, so
the click would be handled only after the cell, too late to matter.

jupyter-ui-poll answers this for ipykernel 6 by calling ``kernel.do_one_iteration()`` while the
cell waits; ipykernel 7 removed that method (ipykernel PR #1458), and jupyter-ui-poll 1.1.0
swallows the AttributeError, so on ipykernel 7.4 it processes nothing (checked: a click sent
to a waiting cell is never seen). :class:`UIEvents` is the small ipykernel 7 equivalent.

ipykernel 7 receives shell messages on its shell-channel thread and forwards the main shell's
to the cell's thread through an inproc ZMQ socket, read by a ZMQStream on that thread's loop.
While the cell waits, :meth:`UIEvents.process` reads that socket itself, on the same thread:

- ``comm_open`` / ``comm_msg`` / ``comm_close`` are handled at once by the kernel's own shell
  handlers (so a button's ``on_click`` runs), as ipykernel itself does for comm messages that
  arrive during an async cell; the cell's parent header is restored after each, so the cell's
  later output stays in the cell;
- everything else — the next cells' ``execute_request`` under "Run All", ``kernel_info``,
  completions, ipykernel's own "stop aborting" marker — is kept, in arrival order, and handed
  back to the kernel's own receive callback by :meth:`UIEvents.close`, so it runs after the
  cell exactly as it would have. ``close`` first reads the socket until it is empty: a ZMQ
  socket's readiness is edge-triggered, and a message left behind after a read by someone
  other than the stream could stay unnoticed.

Only ipykernel 7's layout is supported (checked by :func:`unavailable_reason`); anywhere else
— no kernel, ipykernel 6, another thread — callers use a different way to ask.
"""

from __future__ import annotations

import inspect
import logging
import threading
from types import TracebackType
from typing import Any

__all__ = ["UIEvents", "current_kernel", "unavailable_reason"]

logger = logging.getLogger("relay_nb.notebook")

_COMM_MESSAGES = frozenset({"comm_open", "comm_msg", "comm_close"})


def current_kernel() -> Any:
    """The ipykernel ``Kernel`` running this IPython, or None (a terminal, a test shell)."""
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None)


def unavailable_reason() -> str | None:
    """None when this thread can handle widget messages while it blocks; else why not."""
    kernel = current_kernel()
    if kernel is None:
        return "not running in a Jupyter kernel"
    channel = getattr(kernel, "shell_channel_thread", None)
    if channel is None:
        return "this kernel has no shell-channel thread (ipykernel 7 is needed)"
    if threading.current_thread() is not getattr(channel, "parent_thread", None):
        return "not on the thread that runs the kernel's cells"
    for name in ("session", "shell_handlers", "set_parent", "get_parent", "io_loop"):
        if getattr(kernel, name, None) is None:
            return f"this kernel has no {name!r}"
    try:
        pair = channel.manager.get_shell_channel_to_subshell_pair(None)
    except Exception as exc:  # another ipykernel layout
        return f"cannot find the kernel's shell inbox ({type(exc).__name__}: {exc})"
    stream = getattr(pair, "to_stream", None)
    if getattr(pair, "to_socket", None) is None or stream is None:
        return "the kernel's shell inbox is not set up"
    if not callable(getattr(stream, "_recv_callback", None)):
        return "the kernel's shell inbox has no receive callback"
    return None


class UIEvents:
    """Handle widget messages that arrive while the calling cell blocks (see the module doc).

    Open it on the cell's thread, call :meth:`process` between short sleeps, close it when the
    wait ends (it is a context manager); messages that are not for widgets run after the cell.
    """

    def __init__(self) -> None:
        reason = unavailable_reason()
        if reason is not None:
            raise RuntimeError(f"cannot handle widget events here: {reason}")
        kernel = current_kernel()
        manager = kernel.shell_channel_thread.manager
        pair = manager.get_shell_channel_to_subshell_pair(None)
        self._kernel = kernel
        self._socket = pair.to_socket
        self._receive = pair.to_stream._recv_callback  # the kernel's own dispatch, later
        self._reply_socket = manager.get_subshell_to_shell_channel_socket(None)
        self._thread = threading.current_thread()
        self._kept: list[list[Any]] = []
        self._closed = False
        self.handled = 0  # widget messages handled while open

    def __enter__(self) -> UIEvents:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def process(self) -> int:
        """Handle the widget messages waiting now; keep the others. Returns how many were
        handled."""
        self._check_thread()
        handled = 0
        for frames in self._read_all():
            if self._message_type(frames) in _COMM_MESSAGES:
                self._handle(frames)
                handled += 1
            else:
                self._kept.append(frames)
        self.handled += handled
        return handled

    def close(self) -> None:
        """Hand every message not handled here back to the kernel, in arrival order."""
        if self._closed:
            return
        self._closed = True
        self._check_thread()
        self._kept.extend(self._read_all())  # leave nothing unread (edge-triggered socket)
        kept, self._kept = self._kept, []
        for frames in kept:
            # the kernel's loop runs these after the cell, before anything it reads later
            self._kernel.io_loop.add_callback(self._receive, frames)

    # -- internals --------------------------------------------------------------------------------

    def _check_thread(self) -> None:
        if threading.current_thread() is not self._thread:
            raise RuntimeError("UIEvents is used from the thread that opened it only")

    def _read_all(self) -> list[list[Any]]:
        import zmq

        messages = []
        while True:
            try:
                messages.append(self._socket.recv_multipart(zmq.NOBLOCK, copy=False))
            except zmq.Again:
                return messages

    def _message_type(self, frames: list[Any]) -> str | None:
        """The message's type from its header, without unpacking (or recording) the rest."""
        session = self._kernel.session
        try:
            _idents, parts = session.feed_identities(frames, copy=False)
            # content=False: a peek; jupyter_client records the signature only when it unpacks
            # the content, so the kernel can still accept this message later
            return session.deserialize(parts, content=False, copy=False)["header"]["msg_type"]
        except Exception:  # ipykernel's own markers, anything odd: the kernel decides later
            return None

    def _handle(self, frames: list[Any]) -> None:
        kernel = self._kernel
        try:
            idents, parts = kernel.session.feed_identities(frames, copy=False)
            message = kernel.session.deserialize(parts, content=True, copy=False)
        except Exception:
            logger.warning("ignored an invalid widget message", exc_info=True)
            return
        handler = kernel.shell_handlers.get(message["header"]["msg_type"])
        if handler is None:
            return
        cell_ident = kernel._parent_ident["shell"]
        cell_parent = kernel.get_parent("shell")
        kernel.set_parent(idents, message, channel="shell")
        try:
            result = handler(self._reply_socket, idents, message)
            if inspect.isawaitable(result):  # comm handlers are synchronous; never seen
                _finish_now(result)
        except Exception:
            logger.warning("a widget message handler failed", exc_info=True)
        finally:
            kernel.set_parent(cell_ident, cell_parent, channel="shell")


def _finish_now(awaitable: Any) -> None:
    """Run an awaitable that does not suspend; one that would is closed and reported."""
    coroutine = awaitable.__await__()
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    logger.warning("a widget message handler needed the kernel's loop; not finished")
