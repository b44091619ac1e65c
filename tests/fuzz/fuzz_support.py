"""Shared helpers of the guard fuzz tests (imported by name: ``conftest`` is ambiguous when
pytest has loaded several of them).

* :func:`fuzz_settings` — the one hypothesis profile every property uses: derandomized (the
  same examples on every run, so CI is deterministic), no example database, and hypothesis's
  other caches in the system temp directory (nothing written into the repository), no
  per-example deadline (a database round trip is not the guard's speed).
  ``RELAY_FUZZ_EXAMPLES=N`` runs N examples per property instead of each property's
  CI default; ``RELAY_FUZZ_RANDOM=1`` draws fresh examples each run (local exploration).
* :func:`load_sibling` — import a helper module of another test directory by path, so the
  fuzz tests reuse the existing fixtures' code instead of copying it (:func:`mongo_helpers`).
* :func:`normalise_rows` — database values in a form two runs of one query compare equal by.
"""

from __future__ import annotations

import datetime as dt
import decimal
import importlib.util
import math
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

__all__ = [
    "PROFILE",
    "TESTS",
    "examples",
    "fuzz_settings",
    "load_sibling",
    "mongo_helpers",
    "normalise_rows",
]

PROFILE = "relay-fuzz"
TESTS = Path(__file__).resolve().parents[1]

# database=None stops the example database, but hypothesis still caches constants and unicode
# tables in ./.hypothesis: keep them out of the repository (HYPOTHESIS_STORAGE_DIRECTORY wins)
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "relay_nb_hypothesis")

settings.register_profile(
    PROFILE,
    database=None,
    deadline=None,
    derandomize=os.environ.get("RELAY_FUZZ_RANDOM", "") != "1",
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def examples(default: int) -> int:
    """The example count of one property: its CI default, or ``RELAY_FUZZ_EXAMPLES``."""
    override = os.environ.get("RELAY_FUZZ_EXAMPLES", "").strip()
    if not override:
        return default
    if not override.isdigit() or int(override) < 1:
        raise ValueError(f"RELAY_FUZZ_EXAMPLES must be a positive integer, not {override!r}")
    return int(override)


def fuzz_settings(default_examples: int) -> settings:
    """``@fuzz_settings(n)``: the fuzz profile with this property's example count."""
    return settings(settings.get_profile(PROFILE), max_examples=examples(default_examples))


def load_sibling(relative: str, name: str) -> ModuleType:
    """Import ``tests/<relative>`` under the module name ``name`` (once per session)."""
    if name in sys.modules:
        return sys.modules[name]
    path = TESTS / relative
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def mongo_helpers() -> tuple[ModuleType, ModuleType]:
    """(the Mongo tests' conftest, their ``mongo_support``), imported by path: that conftest
    imports its helpers by bare name, as its own directory on ``sys.path`` would allow."""
    load_sibling("connectors/mongo/seed_mongo.py", "seed_mongo")
    support = load_sibling("connectors/mongo/mongo_support.py", "mongo_support")
    conftest = load_sibling("connectors/mongo/conftest.py", "relay_mongo_conftest_for_fuzz")
    return conftest, support


def _value(value: Any) -> Any:
    """Floats to 9 significant digits: an AVG summed in another order differs in the last
    bits. Decimals as floats (1.0 and 1.00 are the same number). Dates as ISO text."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float | decimal.Decimal):
        number = float(value)
        if math.isnan(number) or math.isinf(number) or number == 0:
            return number
        return float(f"{number:.9g}")
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return value


def normalise_rows(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    return [tuple(_value(v) for v in row) for row in rows]
