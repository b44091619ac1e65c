"""A real IPython shell with %load_ext relay_nb, and a default session on a seeded shop."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.facade import default as facade
from relay_nb.testing.seed import seed_database
from relay_nb.testing.shell import TestingShell


@pytest.fixture(scope="session")
def shop_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('nb_shop') / 'shop.sqlite'}"
    seed_database(url)
    return url


@pytest.fixture(scope="session")
def shell() -> TestingShell:
    return TestingShell()


@pytest.fixture
def model() -> ScriptedRuntime:
    return ScriptedRuntime(model="claude-haiku-4-5")


@pytest.fixture
def relay(shell: TestingShell, model: ScriptedRuntime, shop_url: str) -> Iterator[Relay]:
    """The kernel's default session, on the scripted model, with the shop connected."""
    session = Relay(model, ledger=False)
    session.connect("shop", shop_url)
    facade._default = session
    magics = shell.ip.magics_manager.registry["RelayMagics"]
    for name, trait in magics.traits(config=True).items():  # undo any %config of a test
        setattr(magics, name, trait.default())
    yield session
    facade._default = None
    session.close()
