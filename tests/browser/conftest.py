"""A real JupyterLab in headless Chromium, for the tests in this folder (issue 6, Tests).

JupyterLab runs as a subprocess on 127.0.0.1 (random free port, random token, ``--no-browser``)
with every Jupyter directory — config, data, runtime, lab settings and workspaces, IPython's —
under a temporary directory, so nothing reads or writes the user's own setup. Everything that
would reach the internet is off: the news feed, the update check, the PyPI extension manager;
the page itself may reach nothing but the server (other requests are blocked and fail the test).

The browser is Debian's Chromium (``/usr/bin/chromium``, installed by ``scripts/setup``), driven
by Playwright through ``executable_path``; Playwright never downloads a browser here. Without
it the tests skip with the install command, except under ``CI=true``, where they fail: the
issue requires these tests to really run in CI.

``open_notebook(name, cells, artifact)`` writes a notebook, opens it in the page, waits until
its kernel is connected and idle, and gives a :class:`NotebookPage`: Run All, wait until every
cell ran, read a cell's output area (visible text, as a user sees it), save screenshots under
``test-artifacts/`` (or ``$RELAY_TEST_ARTIFACTS``): ``ARTIFACT.png`` of the final page and
``ARTIFACT-console.log`` always, even when the test failed, others as a test asks.
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
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
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
        # save the state of every open widget with the notebook, so a test sees what a
        # saved notebook would carry (relay_nb's live views must leave none behind)
        "@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings": {"saveState": True},
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


# --- a notebook open in the browser ------------------------------------------------------------

RUN_TIMEOUT_MS = int(os.environ.get("RELAY_BROWSER_TIMEOUT_MS", "90000"))

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

# done: every code cell numbered ([n], not [*] or blank) — or a cell failed, which stops
# "Run All" (later prompts stay blank); the assertions then say which
ALL_RAN = """(n) => {
    const nb = document.querySelector('.jp-Notebook');
    const prompts = [
        ...nb.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt'),
    ].map(p => p.textContent.trim());
    if (prompts.length !== n || prompts.includes('[*]:')) return false;
    const failed = nb.querySelector('[data-mime-type="application/vnd.jupyter.stderr"]');
    return failed !== null || prompts.every(p => /^\\[\\d+\\]:$/.test(p));
}"""


def write_notebook(path: Path, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(nb, path)


@dataclass
class NotebookPage:
    """One notebook open in JupyterLab, its kernel connected and idle."""

    page: Any  # playwright.sync_api.Page
    cell_count: int
    artifacts: Path
    started: float
    external: list[str] = field(default_factory=list)  # requests beyond 127.0.0.1 (blocked)
    console: list[str] = field(default_factory=list)
    loaded: float = 0.0

    def run_all(self) -> None:
        self.page.get_by_role("menuitem", name="Run", exact=True).click()
        self.page.get_by_role("menuitem", name=re.compile(r"^Run All Cells")).click()

    def wait_until_all_ran(self) -> None:
        self.page.wait_for_function(ALL_RAN, arg=self.cell_count)
        self.page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()

    def output(self, index: int) -> Any:
        """The output area of code cell ``index`` (a Playwright locator)."""
        return self.page.locator(".jp-Notebook .jp-CodeCell").nth(index).locator(".jp-OutputArea")

    def expand(self, index: int) -> Any:
        """Open cell ``index``'s collapsed parts, as a user would; returns its output area."""
        area = self.output(index)
        area.evaluate(EXPAND_COLLAPSED)
        return area

    def texts(self) -> list[str]:
        return [self.output(i).inner_text() for i in range(self.cell_count)]

    def screenshot(self, name: str) -> Path:
        path = self.artifacts / name
        self.page.screenshot(path=str(path), full_page=True)
        print(f"\nscreenshot: {path}")
        return path


@pytest.fixture
def open_notebook(
    jupyterlab: JupyterLab, chromium: str
) -> Callable[[str, list[str], str], contextlib.AbstractContextManager[NotebookPage]]:
    """``with open_notebook(name, cells, artifact) as nb:`` — open, its kernel ready."""

    @contextmanager
    def opened(name: str, cells: list[str], artifact: str) -> Iterator[NotebookPage]:
        from playwright.sync_api import sync_playwright

        started = time.monotonic()
        write_notebook(jupyterlab.root / name, cells)
        artifacts = artifacts_dir()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
            try:
                context = browser.new_context(viewport={"width": 1400, "height": 1400})
                nb = NotebookPage(
                    page=None, cell_count=len(cells), artifacts=artifacts, started=started
                )

                def guard(route):  # nothing but our server: JupyterLab must work offline
                    url = route.request.url
                    if url.startswith(jupyterlab.url + "/") or url.startswith(("data:", "blob:")):
                        route.continue_()
                    else:
                        nb.external.append(url)
                        route.abort()

                context.route("**/*", guard)
                page = nb.page = context.new_page()
                page.on("console", lambda m: nb.console.append(f"{m.type}: {m.text}"))
                page.set_default_timeout(RUN_TIMEOUT_MS)
                try:
                    page.goto(f"{jupyterlab.url}/lab/tree/{quote(name)}?token={jupyterlab.token}")
                    # the notebook is open, its kernel started, connected (the server counts
                    # the page's websocket) and idle — before that, "Run All" can be dropped
                    page.locator(".jp-Notebook .jp-Cell").nth(len(cells) - 1).wait_for()
                    jupyterlab.wait_for_connected_kernel(
                        RUN_TIMEOUT_MS / 1000, lambda s: page.wait_for_timeout(s * 1000)
                    )
                    page.get_by_text(re.compile(r"\(ipykernel\) \| Idle$")).wait_for()
                    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()
                    nb.loaded = time.monotonic()
                    yield nb
                finally:
                    nb.screenshot(f"{artifact}.png")
                    console_log = artifacts / f"{artifact}-console.log"
                    console_log.write_text("\n".join(nb.console) + "\n", encoding="utf-8")
                    print(f"browser console: {console_log}; server log: {jupyterlab.log}")
            finally:
                browser.close()
        assert not nb.external, f"the page tried to reach beyond 127.0.0.1: {nb.external}"

    return opened
