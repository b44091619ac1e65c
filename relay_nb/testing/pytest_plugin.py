"""pytest plugin: no test may reach a real model provider unless it opts in.

Loaded through ``-p relay_nb.testing.pytest_plugin`` (see pyproject). It sets the
model-request scope to ``"none"`` for the whole session; a test that talks to a local stub
opts in with ``relay_nb.runtime.allow_model_requests("loopback")``.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading

import pytest

from relay_nb.runtime.switch import set_model_request_scope


def pytest_configure(config: pytest.Config) -> None:
    # the environment variable reaches subprocesses too: notebook kernels, CLI runs
    os.environ["RELAY_MODEL_REQUESTS"] = "none"
    set_model_request_scope("none")
    # a session's default usage ledger must never land in the developer's home directory
    os.environ["RELAY_DATA_DIR"] = tempfile.mkdtemp(prefix="relay_nb_data_")


@pytest.fixture
def loopback_model_requests():
    """Allow model requests to 127.0.0.1 / explicit stub executables for one test."""
    from relay_nb.runtime.switch import allow_model_requests

    with allow_model_requests("loopback"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Each test starts with Python's own Ctrl-C handler, whatever the last one left: a
    library some test drives may install its own and keep it (pyspark's ``SparkContext``
    does, for the rest of the process), and the tests of Ctrl-C (``_thread.interrupt_main``)
    must not depend on which tests ran before them. relay_nb itself installs none."""
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
