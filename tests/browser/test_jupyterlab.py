"""%relay in a real JupyterLab, executed in headless Chromium (issue 6, Tests; item 2).

A notebook is run with "Run" → "Run All Cells", as an analyst would: a scripted, offline
``relay_nb.session(...)`` on a seeded SQLite shop, ``%load_ext relay_nb``, a ``%relay``
question, then the sync ``Relay.ask`` called directly inside the kernel's running event loop,
with plain cells before and after it that must still run — the proof, in a live JupyterLab
kernel and not only under nbclient/nbval, that the sync API neither fails in a running loop
nor wedges the kernel.

Assertions read the *visible text* of each cell's output area (``.jp-OutputArea``), not its
HTML structure: the saved static bundle and a live ipywidgets view must both pass. Collapsed
parts (a ``<details>`` tool call, an Accordion) are opened first, as a user would, so their
text is rendered. A full-page screenshot is kept under ``test-artifacts/`` (or
``$RELAY_TEST_ARTIFACTS``).

JupyterLab runs as a subprocess on 127.0.0.1 (random free port, random token, ``--no-browser``)
with every Jupyter directory — config, data, runtime, lab settings and workspaces, IPython's —
under a temporary directory, so nothing reads or writes the user's own setup. Everything that
would reach the internet is off: the news feed, the update check, the PyPI extension manager.

The browser is Debian's Chromium (``/usr/bin/chromium``, installed by ``scripts/setup``), driven
by Playwright through ``executable_path``; Playwright never downloads a browser here. Without
it the test skips with the install command, except under ``CI=true``, where it fails: the
issue requires this test to really run in CI.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("RELAY_CHROMIUM", "/usr/bin/chromium")
# /work/.library/env/machines/python.md: without the background-networking flags Chromium
# keeps trying to reach Google's hosts, which this machine's closed network refuses.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_S = 60.0


def skip_or_fail(message: str) -> None:
    """Skip locally; under CI=true a missing prerequisite fails (no silent skip)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: the browser test must run, not skip)", pytrace=False)
    pytest.skip(message)


def artifacts_dir() -> Path:
    """``$RELAY_TEST_ARTIFACTS`` or ``test-artifacts/`` at the repo root (git-ignored)."""
    path = Path(os.environ.get("RELAY_TEST_ARTIFACTS") or REPO / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


@pytest.fixture(scope="session")
def chromium() -> str:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        skip_or_fail(
            f"no Chromium at {CHROMIUM}: install Debian's package with "
            "'sudo apt-get install -y chromium' (scripts/setup does it when run as root), "
            "or set RELAY_CHROMIUM; never 'playwright install'"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        skip_or_fail("the playwright package is missing: run scripts/setup (the test extra)")
    return CHROMIUM


@dataclass
class JupyterLab:
    url: str  # http://127.0.0.1:PORT
    token: str
    root: Path
    runtime_dir: Path
    log: Path
    process: subprocess.Popen[bytes]

    def api(self, path: str, method: str = "GET", timeout: float = 5.0) -> object:
        request = urllib.request.Request(
            f"{self.url}{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def wait_for_connected_kernel(self, timeout_s: float, sleep: Callable[[float], None]) -> None:
        """Until exactly one kernel runs, idle, with a client (the page) connected to it.

        ``sleep`` must let Playwright work (``page.wait_for_timeout``): the sync API runs
        route handlers only inside its own calls, so a plain ``time.sleep`` here would hold
        every browser request the guard intercepts (seen: the page stalled for a minute)."""
        deadline = time.monotonic() + timeout_s
        kernels: object = None
        while time.monotonic() < deadline:
            try:
                kernels = self.api("/api/kernels")
            except urllib.error.HTTPError as exc:
                # jupyter_server 2.21 answers 500 while a kernel is mid-start
                # ("'last_activity' trait ... expected a datetime, not the NoneType None")
                kernels = f"HTTP {exc.code}"
            if (
                isinstance(kernels, list)
                and len(kernels) == 1
                and kernels[0].get("connections", 0) >= 1
                and kernels[0].get("execution_state") == "idle"
            ):
                return
            sleep(0.25)
        pytest.fail(f"no connected idle kernel within {timeout_s:.0f}s: {kernels}", pytrace=False)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_lab_settings(settings_dir: Path) -> None:
    """User settings for this server only: no news or update toasts, and every cell kept in
    the DOM (JupyterLab 4 renders long notebooks lazily by default)."""
    settings = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    }
    for name, value in settings.items():
        path = settings_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")


def kernels_started_by(runtime_dir: Path) -> list[int]:
    """Pids of kernels whose connection file is in this server's private runtime dir.

    jupyter_client starts kernels in a session of their own, so killing the server's process
    group does not reach them; their command line names our unique directory."""
    pids = []
    marker = str(runtime_dir).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in cmdline:
            pids.append(int(entry.name))
    return pids


def stop(lab: JupyterLab) -> None:
    """Shut the server down, its kernels included, even when the test failed."""
    process = lab.process
    if process.poll() is None:
        with contextlib.suppress(OSError, urllib.error.URLError):
            lab.api("/api/shutdown", method="POST")  # shuts the kernels down too
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
    for sig, wait_s in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        if process.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=wait_s)
    # the server's own group: anything it started in it (it is the group leader)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    for pid in kernels_started_by(lab.runtime_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def jupyterlab(tmp_path: Path) -> Iterator[JupyterLab]:
    root = tmp_path / "root"
    home = tmp_path / "jupyter"
    dirs = {
        "JUPYTER_CONFIG_DIR": home / "config",
        "JUPYTER_DATA_DIR": home / "data",
        "JUPYTER_RUNTIME_DIR": home / "runtime",
        "JUPYTERLAB_SETTINGS_DIR": home / "lab-settings",
        "JUPYTERLAB_WORKSPACES_DIR": home / "lab-workspaces",
        "IPYTHONDIR": home / "ipython",
    }
    for path in (root, *dirs.values()):
        path.mkdir(parents=True)
    write_lab_settings(dirs["JUPYTERLAB_SETTINGS_DIR"])
    env = {**os.environ, **{name: str(path) for name, path in dirs.items()}}
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env.pop("JUPYTER_PATH", None)
    env.pop("JUPYTER_CONFIG_PATH", None)
    # the kernel inherits this: relay_nb must not reach a model provider (the pytest plugin
    # already exported it; repeated so the intent is visible here)
    env["RELAY_MODEL_REQUESTS"] = "none"

    token = secrets.token_hex(24)
    port = free_port()
    log = artifacts_dir() / "jupyterlab-server.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.terminals_enabled=False",
        # nothing from the internet: no news feed, no update check, no PyPI extension manager
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    if os.environ.get("RELAY_BROWSER_DEBUG"):
        command.append("--debug")
    if os.geteuid() == 0:  # CI runs as root here; Jupyter refuses that unless told
        command.append("--allow-root")
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed in teardown
        )
    lab = JupyterLab(
        url=f"http://127.0.0.1:{port}",
        token=token,
        root=root,
        runtime_dir=dirs["JUPYTER_RUNTIME_DIR"],
        log=log,
        process=process,
    )
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"JupyterLab exited with {process.returncode} during startup:\n"
                    f"{log.read_text(errors='replace')[-3000:]}",
                    pytrace=False,
                )
            try:
                status = lab.api(f"/api/status?token={token}", timeout=2)
                if isinstance(status, dict) and "started" in status:
                    break
            except (OSError, urllib.error.URLError, ValueError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"JupyterLab did not answer /api/status within {SERVER_START_S:.0f}s:\n"
                    f"{log.read_text(errors='replace')[-3000:]}",
                    pytrace=False,
                )
            time.sleep(0.1)
        yield lab
    finally:
        stop(lab)


# --- the notebook and the test --------------------------------------------------------------

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

NOTEBOOK = "relay_browser_e2e.ipynb"
RUN_TIMEOUT_MS = int(os.environ.get("RELAY_BROWSER_TIMEOUT_MS", "90000"))

SETUP = """\
import asyncio
import tempfile
import threading

import relay_nb
from relay_nb import ScriptedRuntime
from relay_nb.testing.seed import seed_database

shop_url = f"sqlite:///{tempfile.mkdtemp()}/shop.sqlite"
seed_database(shop_url)  # 50 customers

model = ScriptedRuntime(
    [
        # %relay how many customers do we have?
        {"tool_calls": [{"name": "query_shop",
                         "input": {"sql": "SELECT COUNT(*) AS customers FROM customers"}}]},
        {"text": "We have **50** customers."},
        # relay_nb.session().ask(...), the sync API, called directly in a cell
        {"tool_calls": [{"name": "query_shop",
                         "input": {"sql": "SELECT COUNT(*) AS products FROM products"}}]},
        {"text": "We sell **20** products."},
    ],
    model="claude-haiku-4-5",
)
relay = relay_nb.session(model=model, ledger=False)
relay.connect("shop", shop_url, tables=["customers", "orders", "products"])
print("setup done")"""

SYNC_ASK = """\
kernel_loop = asyncio.get_running_loop()  # this cell runs inside the kernel's event loop
result = relay_nb.session().ask("how many products do we sell?")
print("sync ask in a running loop:", kernel_loop.is_running(),
      "| thread:", threading.current_thread().name)
print("products:", int(result.df.iloc[0, 0]), "| answer:", result.answer)"""

CELLS = [
    SETUP,
    "%load_ext relay_nb",
    "%relay how many customers do we have?",
    'print("still alive", 6*7)',
    SYNC_ASK,
    'print("still alive", 6*7, "after the sync ask")',
]
RELAY_CELL, ALIVE_CELL, SYNC_CELL, LAST_CELL = 2, 3, 4, 5


def write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nbformat.write(nb, path)


# Collapsed containers a user would click open; covers the static bundle's <details> and
# ipywidgets 8's Accordion/Collapse. Only used to make text visible, never asserted on.
EXPAND_COLLAPSED = """(area) => {
    let opened = 0;
    for (const d of area.querySelectorAll('details:not([open])')) { d.open = true; opened++; }
    for (const h of area.querySelectorAll(
        '.jupyter-widget-Collapse:not(.jupyter-mod-active) > .jupyter-widget-Collapse-header,' +
        '.widget-collapse:not(.mod-active) > .widget-collapse-header')) { h.click(); opened++; }
    return opened;
}"""


def test_relay_magic_and_sync_ask_in_jupyterlab(jupyterlab: JupyterLab, chromium: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    started = time.monotonic()
    write_notebook(jupyterlab.root / NOTEBOOK)
    artifacts = artifacts_dir()
    screenshot = artifacts / "jupyterlab-relay.png"
    external: list[str] = []  # requests that would leave 127.0.0.1 (blocked)
    console: list[str] = []

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1400})

            def guard(route):  # nothing but our server: JupyterLab must work offline
                url = route.request.url
                if url.startswith(jupyterlab.url + "/") or url.startswith(("data:", "blob:")):
                    route.continue_()
                else:
                    external.append(url)
                    route.abort()

            context.route("**/*", guard)
            page = context.new_page()
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.set_default_timeout(RUN_TIMEOUT_MS)
            try:
                page.goto(f"{jupyterlab.url}/lab/tree/{quote(NOTEBOOK)}?token={jupyterlab.token}")
                # the notebook is open, its kernel started, connected (the server counts the
                # page's websocket) and idle — before that, "Run All" can be silently dropped
                page.locator(".jp-Notebook .jp-Cell").nth(len(CELLS) - 1).wait_for()
                jupyterlab.wait_for_connected_kernel(
                    RUN_TIMEOUT_MS / 1000, lambda s: page.wait_for_timeout(s * 1000)
                )
                page.get_by_text(re.compile(r"\(ipykernel\) \| Idle$")).wait_for()
                page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()
                loaded = time.monotonic()

                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_role("menuitem", name=re.compile(r"^Run All Cells")).click()

                # done: every code cell numbered ([n], not [*] or blank) — or a cell failed,
                # which stops "Run All" (later prompts stay blank); the assertions say which
                page.wait_for_function(
                    """(n) => {
                        const nb = document.querySelector('.jp-Notebook');
                        const prompts = [
                            ...nb.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt'),
                        ].map(p => p.textContent.trim());
                        if (prompts.length !== n || prompts.includes('[*]:')) return false;
                        const failed = nb.querySelector(
                            '[data-mime-type="application/vnd.jupyter.stderr"]');
                        return failed !== null || prompts.every(p => /^\\[\\d+\\]:$/.test(p));
                    }""",
                    arg=len(CELLS),
                )
                page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()
                ran = time.monotonic()

                cells = page.locator(".jp-Notebook .jp-CodeCell")
                outputs = [cells.nth(i).locator(".jp-OutputArea") for i in range(len(CELLS))]
                texts = [area.inner_text() for area in outputs]
                for i, text in enumerate(texts):
                    assert "Traceback" not in text, f"cell {i} failed:\n{text}"
                # the %relay cell's visible text (retried: a live view may still be drawing)
                relay_area = outputs[RELAY_CELL]
                relay_area.evaluate(EXPAND_COLLAPSED)
                for expected in (
                    "query_shop",  # the tool call
                    "SELECT COUNT(*)",  # its SQL
                    re.compile(r"customers\s+50\b"),  # the result table
                    "We have 50 customers.",  # the answer, rendered from Markdown
                    re.compile(r"\$\d+\.\d+"),  # the cost
                ):
                    expect(relay_area).to_contain_text(
                        expected, use_inner_text=True, timeout=10_000
                    )
                texts[RELAY_CELL] = relay_area.inner_text()
            finally:
                page.screenshot(path=str(screenshot), full_page=True)
                print(f"\nscreenshot: {screenshot}")
                console_log = artifacts / "jupyterlab-console.log"
                console_log.write_text("\n".join(console) + "\n", encoding="utf-8")
                print(f"browser console: {console_log}; server log: {jupyterlab.log}")
        finally:
            browser.close()

    print(f"--- %relay output (visible text) ---\n{texts[RELAY_CELL]}")
    print(f"--- sync ask output ---\n{texts[SYNC_CELL]}")
    assert "still alive 42" in texts[ALIVE_CELL]
    assert "sync ask in a running loop: True" in texts[SYNC_CELL]
    assert "products: 20 | answer: We sell **20** products." in texts[SYNC_CELL]
    assert "still alive 42 after the sync ask" in texts[LAST_CELL]  # the kernel is not wedged

    assert not external, f"the page tried to reach beyond 127.0.0.1: {external}"
    print(
        f"timings: page+kernel ready {loaded - started:.1f}s, run all {ran - loaded:.1f}s, "
        f"total in test {time.monotonic() - started:.1f}s"
    )
