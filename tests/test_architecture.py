"""Layering and import weight, checked structurally (no timings in tests).

The layer contract lives in pyproject.toml ([tool.importlinter]); DESIGN.md §1 is its prose.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
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
        ("relay_nb/runtime/types.py", "import relay_nb.runtime.scripted", "No import circles"),
        ("relay_nb/sql/dialects.py", "import relay_nb.connectors.base", "Layers"),
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
    # the named contract itself is reported broken (every contract's name is printed)
    verdict = re.search(
        re.escape(broken) + r".*?\b(KEPT|BROKEN)\b", result.stdout.replace("\n", " ")
    )
    assert verdict is not None and verdict.group(1) == "BROKEN", result.stdout[-2000:]


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


def _import_graph(package: Path) -> dict[str, set[str]]:
    """Every module of ``package`` and the package modules it imports — at the top, inside a
    function or under ``if TYPE_CHECKING:`` alike. ``from pkg import name`` counts as an
    import of ``pkg.name`` when that is a module, else of ``pkg``."""
    modules: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, set())
        here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*here[: len(here) - node.level + 1], *filter(None, [base])])
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            else:
                continue
            edges.update(t for n in names if (t := known(n)) not in (None, module))
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles_not_even_lazy_or_for_type_checking():
    """The contract's ``acyclic_siblings`` sees the runtime imports; this also sees the ones
    inside functions and under ``if TYPE_CHECKING:``, where a unit cut in two hides its
    circle (issue 33 found four)."""
    assert _circles(_import_graph(ROOT / "relay_nb")) == []


def test_the_circle_check_finds_a_circle(tmp_path):
    """Guard against a check that cannot fail: a lazy import back up the chain is a circle."""
    shutil.copytree(
        ROOT / "relay_nb", tmp_path / "relay_nb", ignore=shutil.ignore_patterns("__pycache__")
    )
    target = tmp_path / "relay_nb" / "runtime" / "types.py"
    target.write_text(
        target.read_text() + "\n\ndef _planted():\n    from relay_nb.runtime import scripted\n"
    )
    circles = _circles(_import_graph(tmp_path / "relay_nb"))
    assert len(circles) == 1
    assert {"relay_nb.runtime.scripted", "relay_nb.runtime.types"} <= set(circles[0])


def test_the_architecture_page_draws_the_contracts_layers():
    """docs/architecture.md's diagram names the layers the import contract enforces, in its
    order: the page, the contract and DESIGN.md cannot drift apart again."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    layers = [
        sorted(re.findall(r"relay_nb\.(\w+)", layer) or ["(root)"]) for layer in contract["layers"]
    ]
    page = (ROOT / "docs" / "architecture.md").read_text()
    diagram = page.split("<!-- layers -->")[1].split("```")[1]
    drawn = [
        sorted(re.findall(r"(\w+)(?:/|\.py)", line))
        for line in diagram.splitlines()
        if re.match(r"\s*\w+(/|\.py)", line)
    ]
    assert drawn == layers
