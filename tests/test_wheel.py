"""The package as an analyst installs it (issue 37, item 4): ``python -m build`` makes the
wheel, pip installs it with the ``notebook`` extra into a fresh virtual environment — offline,
from the wheelhouse ``scripts/setup`` downloads — and, in a directory outside the clone, the
docs' commands run: ``relay-nb demo``, ``relay-nb demo --notebook`` (a real kernel of that
environment), ``relay-nb demo --examples`` then ``relay-nb eval`` on the shipped bank."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE = ROOT / ".cache" / "wheelhouse"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _run(command: list[str | Path], *, cwd: Path, env: dict[str, str], timeout: float = 600):
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``python -m build`` makes from a copy of the sources (the clone stays clean)."""
    if not (WHEELHOUSE / "requirements.txt").exists():
        pytest.fail("no wheelhouse: run scripts/setup (it downloads .cache/wheelhouse)")
    source = tmp_path_factory.mktemp("source")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "relay_nb", source / "relay_nb", ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "PIP_NO_INDEX": "1"}
    build = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, source]
    _run(build, cwd=source, env=env)
    (built,) = dist.glob("relay_nb-*.whl")
    return built


def test_the_wheel_holds_the_package_its_data_and_complete_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
        entry_points = archive.read(metadata_name.replace("METADATA", "entry_points.txt"))
    for shipped in (
        "relay_nb/py.typed",
        "relay_nb/agent/prices.json",
        "relay_nb/demo/examples/shop_questions.yaml",
        "relay_nb/demo/examples/shop_answers.json",
        "relay_nb/demo/examples/shop_expected/categories.csv",
        "relay_nb/demo/examples/hello_script.json",
    ):
        assert shipped in names, shipped
    assert not [n for n in names if n.startswith(("tests/", "notebooks/", "benchmarks/"))]
    assert metadata["Name"] == "relay-nb" and metadata["Requires-Python"] == ">=3.11"
    assert metadata["License-Expression"] == "MIT"
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert metadata["Summary"] and metadata["Description-Content-Type"] == "text/markdown"
    extras = set(metadata.get_all("Provides-Extra") or [])
    assert {"notebook", "postgres", "mysql", "duckdb", "openai", "mcp"} <= extras
    assert b"relay-nb = relay_nb.cli:main" in entry_points


def test_the_wheel_installed_with_pip_runs_the_docs_commands_outside_the_clone(
    wheel: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "fresh"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path, env=dict(os.environ))
    python, command = venv / "bin" / "python", venv / "bin" / "relay-nb"
    work = tmp_path / "analyst"
    work.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "VIRTUAL_ENV", "ANTHROPIC_API_KEY", "RELAY_MODEL")
        and not key.startswith(("JUPYTER", "PIP_"))
    }
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        RELAY_DATA_DIR=str(tmp_path / "relay_data"),
        RELAY_MODEL_REQUESTS="none",
        JUPYTER_DATA_DIR=str(tmp_path / "jupyter"),
        HOME=str(tmp_path / "home"),
    )
    install = [python, "-m", "pip", "install", "--quiet", "--no-index", "--find-links"]
    _run([*install, WHEELHOUSE, f"{wheel}[notebook]"], cwd=work, env=env)
    where = _run([python, "-c", "import relay_nb; print(relay_nb.__file__)"], cwd=work, env=env)
    assert where.stdout.strip().startswith(str(venv))  # the installed copy, not the clone

    demo = _run([command, "demo"], cwd=work, env=env)
    assert demo.stdout.count("A: ") == 3 and "scripted model" in demo.stdout

    notebook = _run([command, "demo", "--notebook"], cwd=work, env=env)
    executed = json.loads((work / "relay_nb_quickstart.ipynb").read_text(encoding="utf-8"))
    outputs = [o for cell in executed["cells"] for o in cell.get("outputs", [])]
    assert outputs and not [o for o in outputs if o.get("output_type") == "error"]
    assert "relay_nb_quickstart.ipynb" in notebook.stdout

    examples = _run([command, "demo", "--examples"], cwd=work, env=env)
    assert "Next: relay-nb eval examples/shop_questions.yaml" in examples.stdout
    evaluation = _run(
        [
            command,
            "eval",
            "examples/shop_questions.yaml",
            "--model",
            "scripted:examples/shop_answers.json",
        ],
        cwd=work,
        env=env,
    )
    assert "accuracy" in evaluation.stdout.lower() and "avg-order-value" in evaluation.stdout
