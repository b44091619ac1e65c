"""The example files the docs' commands use, shipped inside the package.

``relay-nb demo --examples [DIR]`` writes them (default ``./examples``), so a wheel installed
with pip runs ``relay-nb eval examples/shop_questions.yaml --model
scripted:examples/shop_answers.json`` outside any clone, exactly as the docs write it:

- ``shop_questions.yaml``: the demo shop's question bank (36 questions with gold SQL; it
  connects the demo database itself, so it needs no other file);
- ``shop_answers.json``: a scripted model's answers to it, a dozen of them wrong on purpose;
- ``shop_expected/categories.csv``: an expected result the bank names by path;
- ``hello_script.json``: the smallest scripted model (``relay-nb invoke scripted:…``).

A file that already exists is left as it is and named (the clone's ``examples/`` holds links
to these same files).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from relay_nb.errors import ConfigurationError

__all__ = ["EXAMPLE_FILES", "write_examples"]

EXAMPLE_FILES = (
    "shop_questions.yaml",
    "shop_answers.json",
    "shop_expected/categories.csv",
    "hello_script.json",
)


def write_examples(directory: str | Path = "examples") -> tuple[list[Path], list[Path]]:
    """Write the example files into ``directory``: ``(written, kept)`` — a file already
    there is kept, not overwritten."""
    target = Path(directory).expanduser()
    if target.exists() and not target.is_dir():
        raise ConfigurationError(f"{target} is a file; name a directory for the examples")
    shipped = resources.files("relay_nb.demo").joinpath("examples")
    written: list[Path] = []
    kept: list[Path] = []
    for name in EXAMPLE_FILES:
        path = target / name
        if path.exists():
            kept.append(path)
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(shipped.joinpath(name).read_bytes())
        except OSError as exc:
            raise ConfigurationError(f"cannot write {path}: {exc.strerror or exc}") from None
        written.append(path)
    return written, kept
