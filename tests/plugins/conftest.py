"""Connector plugins: the example plugin (imported from examples/, or installed for real), CSV
directories to point it at, and a clean slate of notebook-registered types for every test.

``installed_csvdir`` pip-installs ``examples/relay_nb_csvdir`` once per session into a
temporary ``--target`` directory, from a copy (an in-tree build would leave build files in
the repository). It builds with the venv's own setuptools and no index — offline, like every
test here — which needs pip and a setuptools that builds wheels on its own (>= 70.1, or with
``wheel``): without them the fixture fails at once and says what to install.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType

import pytest
from plugin_support import EXAMPLE, write_csv_dir

from relay_nb.connectors import plugins


@pytest.fixture(autouse=True)
def _no_notebook_types_left() -> Iterator[None]:
    """Types registered from "cells" live for the process: every test starts without any."""
    yield
    for info in plugins.connector_types():
        if info.source == "notebook":
            plugins.unregister_connector_type(info.name)


@pytest.fixture(scope="session")
def csvdir_module() -> ModuleType:
    """The example plugin's module, imported from examples/ (as a notebook would after
    adding it to sys.path) — for the tests that register it from a cell."""
    spec = importlib.util.spec_from_file_location("relay_nb_csvdir", EXAMPLE / "relay_nb_csvdir.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["relay_nb_csvdir"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def csv_dir(tmp_path: Path) -> Path:
    return write_csv_dir(tmp_path / "data")


def _can_build_offline() -> bool:
    try:
        major, minor = (int(p) for p in version("setuptools").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


@pytest.fixture(scope="session")
def installed_csvdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding relay-nb-csvdir as pip installed it (put it on PYTHONPATH)."""
    base = tmp_path_factory.mktemp("csvdir_plugin")
    source, target = base / "source", base / "site"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    if importlib.util.find_spec("pip") is None or not _can_build_offline():
        pytest.fail(
            "installing the example plugin offline needs pip and setuptools>=70.1 in the test "
            "environment: pip install 'relay-nb[test]' pip"
        )
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--no-index"]
    command += ["--no-build-isolation", "--target", str(target), str(source)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert list(target.glob("relay_nb_csvdir-0.1.0.dist-info/entry_points.txt"))
    return target
