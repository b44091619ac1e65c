"""``relay-nb demo``: a sample shop database, three questions end to end, a quickstart notebook.

- :mod:`relay_nb.demo.data` — the sample database (SQLite, seeded, two years of orders);
- :mod:`relay_nb.demo.script` — the offline model: real SQL, answers from the real results;
- :mod:`relay_nb.demo.quickstart` — the ``%relay`` notebook, written and executed;
- :mod:`relay_nb.demo.run` — the command itself.

The layer under ``relay_nb.cli`` (whose ``relay-nb ask`` and ``relay-nb eval`` reuse its model
choice and transcript); it never imports ``relay_nb.notebook``.
Names load on first use, so importing this package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relay_nb._lazy import lazy_exports

_EXPORTS = {
    "ShopDatabase": "relay_nb.demo.data",
    "build_shop_database": "relay_nb.demo.data",
    "generate_shop": "relay_nb.demo.data",
    "DEMO_QUESTIONS": "relay_nb.demo.script",
    "demo_questions": "relay_nb.demo.script",
    "scripted_demo_model": "relay_nb.demo.script",
    "run_demo": "relay_nb.demo.run",
}

__all__ = [
    "DEMO_QUESTIONS",
    "ShopDatabase",
    "build_shop_database",
    "demo_questions",
    "generate_shop",
    "run_demo",
    "scripted_demo_model",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from relay_nb.demo.data import ShopDatabase, build_shop_database, generate_shop
    from relay_nb.demo.run import run_demo
    from relay_nb.demo.script import DEMO_QUESTIONS, demo_questions, scripted_demo_model
