"""The README and the docs site tell the truth (issue 18, Docs).

- Every ``python`` and ``ipython`` code block of the README and of each page under ``docs/``
  runs, in order, in one IPython shell per page (magics included), in an empty directory,
  offline. A block that cannot run here (a real model, your own server) says why on the line
  before it: ``<!-- not run: REASON -->``.
- The notebook reference's tables of ``%relay`` options and ``%config RelayMagics`` settings
  are generated from the code that parses them, so they cannot drift.
- The site builds with ``mkdocs build --strict``: a broken link or anchor fails.
- The README stays a newcomer's page: short, no build history, links that resolve.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from relay_nb.testing.shell import TestingShell

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
FENCE = re.compile(
    r"^(?:<!-- not run: (?P<reason>[^>]+) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.M | re.S
)
RUNNABLE = ("python", "ipython")


def blocks(page: Path) -> list[tuple[str, str, str | None]]:
    """``(language, code, reason not run)`` of each fenced block, in order."""
    text = page.read_text(encoding="utf-8")
    return [(m["lang"], m["body"], m["reason"]) for m in FENCE.finditer(text)]


@pytest.fixture(scope="module")
def shell() -> TestingShell:
    return TestingShell()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_code_blocks_run(page: Path, shell: TestingShell, tmp_path: Path, monkeypatch) -> None:
    from relay_nb.facade import default as facade

    for variable in ("RELAY_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "RELAY_CONFIG"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("RELAY_DATA_DIR", str(tmp_path / "data"))  # the default ledger
    monkeypatch.chdir(tmp_path)
    shell.ip.reset(new_session=False)
    ran = 0
    try:
        for language, code, reason in blocks(page):
            if language not in RUNNABLE:
                continue
            if reason is not None:
                assert reason.strip(), f"{page.name}: a block not run must say why"
                continue
            try:
                shell.run(code)
            except BaseException as exc:
                pytest.fail(f"{page.name}: this block failed with {exc!r}:\n{code}")
            ran += 1
    finally:
        relay = facade.existing_default_relay()
        if relay is not None:
            relay.close()
        facade._default = None
    print(f"{page.name}: {ran} blocks ran")


def test_pages_with_examples_run_some() -> None:
    """The not-run marker is not a way out: the pages that teach by example run them."""
    for name in ("tutorial.md", "notebook.md", "python.md", "testing.md", "cost.md"):
        runnable = [b for b in blocks(DOCS / name) if b[0] in RUNNABLE and b[2] is None]
        assert runnable, f"{name} has no example that runs"


# -- generated reference tables -------------------------------------------------------------


def options_table() -> str:
    from relay_nb.notebook.command import OPTIONS

    kinds = {
        "setting": "a setting (below)",
        "question": "with a question",
        "action": "alone on its line",
        "connect": "with `--connect`",
        "eval": "with `--eval`",
    }
    lines = ["| Option | What it does | Goes |", "|---|---|---|"]
    for name, option in OPTIONS.items():
        spelled = f"`{name} {option.values}`" if option.values else f"`{name}`"
        lines.append(f"| {spelled} | {option.help} | {kinds[option.kind]} |")
    return "\n".join(lines)


def config_table() -> str:
    from relay_nb.notebook.magics import RelayMagics

    lines = ["| Setting | Default | What it does |", "|---|---|---|"]
    for name, trait in sorted(RelayMagics.class_traits(config=True).items()):
        default = trait.default()
        lines.append(f"| `RelayMagics.{name}` | `{default!r}` | {trait.help} |")
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("marker", "make"), [("magic-options", options_table), ("magic-config", config_table)]
)
def test_the_notebook_reference_tables_are_generated(marker: str, make) -> None:
    text = (DOCS / "notebook.md").read_text(encoding="utf-8")
    start, end = f"<!-- {marker}:start -->\n", f"\n<!-- {marker}:end -->"
    shown = text[text.index(start) + len(start) : text.index(end)]
    assert shown == make(), f"docs/notebook.md's {marker} table is stale; paste:\n{make()}"


# -- the site and the README ----------------------------------------------------------------


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "notebook" / "index.html").exists()


def test_the_readme_is_a_newcomers_page() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for internal in ("DESIGN.md", "issue ", "Relay-E", "shared/"):
        assert internal not in text, internal
    first_screen = "\n".join(text.splitlines()[:50])
    assert "%relay --connect" in first_screen and "relay-nb demo" in first_screen
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to a missing {target}"
