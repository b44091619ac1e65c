"""Every notebook and the demo, run with canary credentials everywhere: none may come back.

Each notebook in ``notebooks/`` runs in a real ipykernel (nbclient) whose environment holds
every canary (API keys, AWS-style keys, tokens, database URLs with passwords) and whose
relay_nb log is at DEBUG in a file (``kernel_logging/sitecustomize.py``). A last cell added
to each run dumps every request its scripted models received — the prompts. ``relay-nb
demo`` runs three ways: offline (scripted), and — terminal and ``--notebook`` — with the
canary ``ANTHROPIC_API_KEY`` against a local Anthropic stub, whose received requests are the
prompts. Then everything is scanned: saved notebooks (outputs, widget state, metadata),
kernel and command output, logs, the temp dir each run wrote into (recordings, ledgers,
databases), ``RELAY_DATA_DIR`` and the prompts. The runs (``secret_runs``) go in parallel
and start with the session; they dominate the suite's time.
"""

from __future__ import annotations

import json
import os

import pytest
from secret_runs import AUTH_HEADERS, DEMO_SQL, NOTEBOOKS, Run, RunBatch
from secret_scan import Canaries, Evidence, find_leaks

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def runs(run_batch: RunBatch) -> dict[str, Run]:
    """Every notebook and demo run, finished (they started with the session)."""
    return run_batch.results()


def _skip_or_fail(run: Run) -> None:
    if run.skipped is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{run.name}: {run.skipped} (CI=true: every notebook must run)")
    pytest.skip(run.skipped)


# ------------------------------------------------------------------------------ notebooks


@pytest.mark.parametrize("name", [source.stem for source in NOTEBOOKS])
def test_notebook_run_leaves_no_secret(runs: dict[str, Run], canaries: Canaries, name: str):
    run = runs[name]
    _skip_or_fail(run)
    assert run.error is None, f"{name} failed to run: {run.error}"
    assert run.log_files >= 1, "the kernel wrote no relay_nb log: the logging hook did not load"
    if "relay.ask(" in run.sources or "%relay" in run.sources:  # a turn logs its context
        assert run.log_bytes > 0, "a notebook that asks questions left an empty relay_nb log"
    assert (run.workdir / f"{name}.ipynb").stat().st_size > 0
    run.evidence.assert_clean(canaries)
    if run.local_secrets:
        # the notebook's own secret: in its source by design, nowhere else
        own = Evidence()
        for artifact, data in run.evidence.artifacts.items():
            if artifact.endswith(".ipynb"):
                saved = json.loads(data)
                for cell in saved["cells"]:
                    cell["source"] = ""
                data = json.dumps(saved).encode()
                artifact += " (cell sources removed)"
            own.add(artifact, data)
        own.assert_clean(canaries.with_extra(*run.local_secrets))


def test_the_notebooks_prompts_were_captured(runs: dict[str, Run]):
    """The scan of what the model saw is only as good as the capture: it must be non-empty
    for every notebook that asks a scripted model something."""
    ran = {name: run for name, run in runs.items() if run.skipped is None and name[0].isdigit()}
    asked = {name: run.prompts for name, run in ran.items() if "ScriptedRuntime(" in run.sources}
    assert asked and all(count > 0 for count in asked.values()), asked


def test_a_secret_set_by_a_notebook_is_known_to_the_suite(runs: dict[str, Run]):
    """09 sets WAREHOUSE_PASSWORD in a cell and loads a config using it: that value is
    scanned for too (outputs, logs, files), not only the environment's canaries."""
    found = {c.label for run in runs.values() for c in run.local_secrets}
    assert any("WAREHOUSE_PASSWORD" in label for label in found), found


# ------------------------------------------------------------------------------ the demo


def test_demo_offline_leaves_no_secret(runs: dict[str, Run], canaries: Canaries):
    run = runs["demo-offline"]
    assert run.error is None, run.error
    assert run.stdout.startswith("relay-nb demo · offline")
    assert run.log_bytes > 0, "the command's relay_nb log is empty: the logging hook did not load"
    assert run.stdout.count("── Question ") == 3
    run.evidence.assert_clean(canaries)


@pytest.mark.parametrize("name", ["demo-anthropic", "demo-notebook"])
def test_demo_with_the_key_sends_it_only_in_the_auth_header(
    runs: dict[str, Run], canaries: Canaries, name: str
):
    """The canary key reached the stub — so it was the key in use — in the auth header of
    every request and nowhere else: not in a prompt, not in any output, log or file."""
    run = runs[name]
    assert run.error is None, run.error
    assert run.stdout.startswith("relay-nb demo · model anthropic (routed by tier)")
    assert run.log_bytes > 0, "the command's relay_nb log is empty: the logging hook did not load"
    assert len(run.stub_requests) == 2 * len(DEMO_SQL)
    key = canaries.env["ANTHROPIC_API_KEY"]
    for request in run.stub_requests:
        carrying = [k for k, v in request.headers.items() if key in v]
        assert len(carrying) == 1 and carrying[0] in AUTH_HEADERS, carrying
        value = request.headers[carrying[0]]
        assert value in (key, f"Bearer {key}"), "the key arrived altered"
        assert find_leaks({"request body": request.raw_body}, canaries) == []
    if name == "demo-notebook":
        executed = json.loads((run.workdir / "quickstart.ipynb").read_text(encoding="utf-8"))
        assert "model = None" in "".join(executed["cells"][1]["source"])
        assert run.log_files >= 2, "the command and its kernel both log"
    run.evidence.assert_clean(canaries)
    assert any(name.endswith("usage.sqlite") for name in run.evidence.names()), (
        "the default usage ledger was not written under RELAY_DATA_DIR"
    )
