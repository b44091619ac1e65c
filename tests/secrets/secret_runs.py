"""Every notebook and the demo, run in parallel with the canaries in their environment.

Each notebook of ``notebooks/`` runs in a real ipykernel (nbclient); ``relay-nb demo`` runs
offline, and — in the terminal and with ``--notebook`` — with the canary
``ANTHROPIC_API_KEY`` against a local Anthropic stub. Every run gets its own directory: the
working directory, ``TMPDIR`` (where the notebooks write recordings, ledgers and databases),
``RELAY_DATA_DIR`` (the default usage ledger) and ``logs/``, where
``kernel_logging/sitecustomize.py`` puts relay_nb's DEBUG log of every process the run
starts. A cell appended to each notebook dumps every request its scripted models received
(the prompts) to ``prompts.json``.

:func:`start_runs` only submits the runs; the suite starts them once the tests are collected, so
they run while the in-process tests do, and :meth:`RunBatch.results` waits for them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from secret_scan import Canaries, Canary, Evidence

from relay_nb.redaction import is_secret_name
from relay_nb.testing.anthropic_stub import AnthropicStub, MessageReply, RecordedRequest, ToolUse

__all__ = ["AUTH_HEADERS", "DEMO_SQL", "NOTEBOOKS", "Run", "RunBatch", "start_runs"]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
HOOK_DIR = Path(__file__).with_name("kernel_logging")
NEEDS = {"07_postgresql": "RELAY_TEST_PG_URL"}
"""Notebooks that need a service (as ``notebooks/conftest.py`` says for nbval)."""
CELL_TIMEOUT_S = 180
KERNEL_START_TIMEOUT_S = 300
"""A kernel starts in a second or two when idle; on two busy cores beside the suite it has
taken over a minute (nbclient's default wait is 60 s)."""
WORKERS = 4
"""Runs at once: all of them together (sixteen kernels) starved each other on two cores."""
AUTH_HEADERS = ("x-api-key", "authorization")
DEMO_SQL = (
    "SELECT COUNT(*) AS n FROM orders",
    "SELECT name, country FROM customers ORDER BY id LIMIT 5",
    "SELECT category, COUNT(*) AS n FROM products GROUP BY category",
)
DEMO_RUNS = {
    "demo-offline": ["--db", "shop.sqlite"],
    "demo-anthropic": ["--db", "shop.sqlite"],
    "demo-notebook": ["--notebook", "quickstart.ipynb"],
}
PROBE = """\
# added by the secrets suite: every request this notebook's scripted models and local
# provider stubs (a Chat Completions endpoint on 127.0.0.1, say) received
import gc as _gc, json as _json
from relay_nb.runtime.scripted import ScriptedRuntime as _Scripted
from relay_nb.testing.stub_server import ScriptedStub as _Stub
_prompts = [
    request.model_dump(mode="json")
    for _model in _gc.get_objects() if isinstance(_model, _Scripted)
    for request in _model.requests
] + [
    request.body
    for _stub in _gc.get_objects() if isinstance(_stub, _Stub)
    for request in _stub.requests
]
with open({path!r}, "w", encoding="utf-8") as _file:
    _json.dump(_prompts, _file)
"""
_ENV_ASSIGNMENT = re.compile(r"""os\.environ\[["'](\w+)["']\]\s*=\s*["']([^"']+)["']""")


@dataclass
class Run:
    """One notebook or demo run and everything it left behind."""

    name: str
    workdir: Path
    evidence: Evidence = field(default_factory=Evidence)
    error: str | None = None
    skipped: str | None = None
    prompts: int = 0
    log_files: int = 0
    log_bytes: int = 0
    local_secrets: list[Canary] = field(default_factory=list)
    sources: str = ""
    stdout: str = ""
    stub_requests: list[RecordedRequest] = field(default_factory=list)
    seconds: float = 0.0


class RunBatch:
    """The submitted runs; :meth:`results` waits for all of them (once)."""

    def __init__(
        self,
        pool: ThreadPoolExecutor,
        futures: dict[str, Future[Run]],
        skipped: dict[str, str],
        stubs: list[AnthropicStub],
    ) -> None:
        self._pool, self._futures, self._skipped, self._stubs = pool, futures, skipped, stubs
        self._results: dict[str, Run] | None = None
        self.started = time.perf_counter()
        self.seconds = 0.0

    def results(self) -> dict[str, Run]:
        if self._results is None:
            try:
                results = {name: future.result() for name, future in self._futures.items()}
            finally:
                self.close()
            results.update({n: Run(n, Path(), skipped=r) for n, r in self._skipped.items()})
            self._results = results
            self.seconds = time.perf_counter() - self.started
        return self._results

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for stub in self._stubs:
            stub.close()


def start_runs(canaries: Canaries, make_dir: Callable[[str], Path]) -> RunBatch:
    """Submit every notebook and demo run; ``make_dir(name)`` gives each its directory.

    The environment is read here, on the caller's thread: tests running meanwhile may
    change ``os.environ`` (monkeypatch), which the runs must neither see nor race with.
    """
    base = {**os.environ, **canaries.env}
    jobs: dict[str, Callable[[], Run]] = {}
    skipped: dict[str, str] = {}
    for source in NOTEBOOKS:
        needed = NEEDS.get(source.stem)
        if needed and not base.get(needed):
            skipped[source.stem] = f"{needed} is not set: run scripts/services start"
            continue
        workdir = make_dir(source.stem)
        jobs[source.stem] = lambda s=source, w=workdir: _run_notebook(s, base, w)
    stubs = {
        "demo-anthropic": _stub_with_demo_replies(),
        "demo-notebook": _stub_with_demo_replies(),
    }
    for name, args in DEMO_RUNS.items():
        workdir = make_dir(name)
        stub = stubs.get(name)
        jobs[name] = lambda n=name, a=args, w=workdir, s=stub: _run_demo(n, a, base, w, s)
    pool = ThreadPoolExecutor(max_workers=min(WORKERS, len(jobs)), thread_name_prefix="secrets-run")
    futures = {name: pool.submit(job) for name, job in jobs.items()}
    return RunBatch(pool, futures, skipped, list(stubs.values()))


def _env(base: Mapping[str, str], workdir: Path, **extra: str) -> dict[str, str]:
    """The run's environment: the canaries, the logging hook and the run's own dirs."""
    dirs = {name: workdir / name for name in ("logs", "tmp", "relay_data")}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    python_path = os.pathsep.join(p for p in (str(HOOK_DIR), base.get("PYTHONPATH")) if p)
    return {
        **base,
        "PYTHONPATH": python_path,
        "RELAY_SECRETS_LOG_DIR": str(dirs["logs"]),
        "TMPDIR": str(dirs["tmp"]),  # recordings, ledgers and databases the notebooks write
        "RELAY_DATA_DIR": str(dirs["relay_data"]),  # the default usage ledger
        "RELAY_MODEL_REQUESTS": "none",
        **extra,
    }


def _collect(run: Run) -> None:
    """Everything under the run's directory, and how many log files relay_nb wrote."""
    run.evidence.add_tree(run.workdir, run.name)
    logs = list((run.workdir / "logs").glob("python-*.log"))
    run.log_files, run.log_bytes = len(logs), sum(path.stat().st_size for path in logs)


def _run_notebook(source: Path, base: Mapping[str, str], workdir: Path) -> Run:
    run = Run(source.stem, workdir)
    started = time.perf_counter()
    notebook = nbformat.read(source, as_version=4)
    run.sources = "\n".join(cell.source for cell in notebook.cells)
    # a secret the notebook itself sets (os.environ["X_PASSWORD"] = "…") may be in its source,
    # but in no output, log or file
    run.local_secrets = [
        Canary(f"{name} set in {source.name}", value)
        for name, value in _ENV_ASSIGNMENT.findall(run.sources)
        if is_secret_name(name)
    ]
    prompts_file = workdir / "prompts.json"
    notebook.cells.append(nbformat.v4.new_code_cell(PROBE.format(path=str(prompts_file))))
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        startup_timeout=KERNEL_START_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
    )
    env = _env(base, workdir)
    try:
        with (workdir / "kernel-output.txt").open("wb") as output:
            client.execute(env=env, stdout=output, stderr=output)
    except CellExecutionError as exc:
        run.error = f"{exc.ename}: {exc.evalue}"
    finally:
        nbformat.write(notebook, str(workdir / source.name))
    if prompts_file.exists():
        run.prompts = len(json.loads(prompts_file.read_text(encoding="utf-8")))
    _collect(run)
    run.seconds = time.perf_counter() - started
    return run


def _stub_with_demo_replies() -> AnthropicStub:
    stub = AnthropicStub().start()
    for number, sql in enumerate(DEMO_SQL, 1):
        stub.enqueue(
            MessageReply(
                tool_uses=[ToolUse(name="query_shop", input={"sql": sql})],
                model="claude-sonnet-4-6",
                input_tokens=1500,
                output_tokens=40,
            ),
            MessageReply(text=f"Answer {number}.", model="claude-sonnet-4-6", input_tokens=1600),
        )
    return stub


def _run_demo(
    name: str,
    args: list[str],
    base: Mapping[str, str],
    workdir: Path,
    stub: AnthropicStub | None,
) -> Run:
    """``relay-nb demo ARGS`` (the installed command); with ``stub``, the canary key is set
    and requests go there, else the key is removed and the demo runs offline."""
    run = Run(name, workdir)
    started = time.perf_counter()
    if stub is not None:
        env = _env(base, workdir, ANTHROPIC_BASE_URL=stub.base_url, RELAY_MODEL_REQUESTS="loopback")
    else:
        env = _env(base, workdir)
        del env["ANTHROPIC_API_KEY"]  # with a key the demo would call a model
    command = Path(sys.executable).with_name("relay-nb")
    done = subprocess.run(
        [str(command), "demo", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        timeout=CELL_TIMEOUT_S * 2,
        check=False,
    )
    run.stdout = done.stdout.decode("utf-8", "replace")
    (workdir / "command-stdout.txt").write_bytes(done.stdout)
    (workdir / "command-stderr.txt").write_bytes(done.stderr)
    if done.returncode != 0:
        run.error = f"exit {done.returncode}: {done.stderr.decode('utf-8', 'replace')[-2000:]}"
    _collect(run)
    if stub is not None:
        run.stub_requests = stub.requests
        for index, request in enumerate(run.stub_requests):
            run.evidence.add(f"{name}: prompt {index} sent to the model (body)", request.raw_body)
            others = {k: v for k, v in request.headers.items() if k not in AUTH_HEADERS}
            run.evidence.add(f"{name}: prompt {index} headers but the key's", json.dumps(others))
    run.seconds = time.perf_counter() - started
    return run
