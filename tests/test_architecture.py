"""Layering and import weight, checked structurally (no timings in tests).

The layer contract lives in pyproject.toml ([tool.importlinter]); DESIGN.md §1 is its prose.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(project / "pyproject.toml"), "--no-cache"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_layers_hold():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("relay_nb/runtime/types.py", "import relay_nb.cli", "Layers"),
        ("relay_nb/runtime/scripted.py", "import anthropic", "Only runtime/anthropic.py"),
        ("relay_nb/errors.py", "import relay_nb.testing", "never imports relay_nb.testing"),
    ],
)
def test_the_contract_catches_a_violation(tmp_path, module, line, broken):
    """Guard against a contract that cannot fail: plant a violation in a copy and see it caught."""
    shutil.copytree(
        ROOT / "relay_nb", tmp_path / "relay_nb", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{line}  # planted\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert broken in result.stdout.replace("\n", " ")


def test_import_relay_nb_loads_no_heavy_modules():
    """`import relay_nb` must stay fast: nothing heavy loads until a name is used."""
    code = (
        "import sys, relay_nb; heavy = ['pydantic', 'anthropic', 'pandas', 'sqlalchemy', "
        "'sqlglot', 'IPython', 'ipywidgets', 'httpx', 'httpx2', 'numpy', 'asyncio']; "
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_runtime_package_does_not_load_provider_sdks():
    code = (
        "import sys, relay_nb.runtime, relay_nb.runtime.profiles, relay_nb.runtime.anthropic, "
        "relay_nb.runtime.claude_code, relay_nb.runtime.openai_compat; "
        "heavy = ['anthropic', 'openai', 'httpx2', 'httpx', 'pandas', 'IPython']; "
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
