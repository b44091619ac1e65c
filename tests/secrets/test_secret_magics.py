"""``%relay`` in a real IPython shell, connecting with URLs that carry passwords.

The URLs come from notebook variables through ``{var}`` interpolation (and one by variable
name), so the cells' text holds no secret — and neither may anything the cells print,
display or raise, the ``--connectors`` table, the turn's saved output, or the input history.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from secret_scan import Canaries, Evidence

from relay_nb import Relay, ScriptedRuntime
from relay_nb.errors import ConnectorError
from relay_nb.facade import default as facade
from relay_nb.notebook.magics import RelayCellError
from relay_nb.testing.shell import TestingShell

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def shell(canary_env: Canaries) -> Iterator[tuple[TestingShell, ScriptedRuntime]]:
    """The process's IPython shell, its default session on a scripted model."""
    model = ScriptedRuntime(
        [
            {
                "tool_calls": [
                    {"name": "query_shop", "input": {"sql": "SELECT COUNT(*) AS n FROM orders"}},
                    {"name": "query_warehouse", "input": {"sql": "SELECT 1 AS one"}},
                ]
            },
            {"text": "Counted; the warehouse refused the login."},
        ],
        model="claude-haiku-4-5",
    )
    shell = TestingShell()
    relay = Relay(model, ledger=False)
    facade._default = relay
    try:
        yield shell, model
    finally:
        facade._default = None
        relay.close()
        for name in (
            *("pg_url", "database_url", "mongo_url", "warehouse_url", "config_path"),
            *("broken_url", "inline_path", "counted"),
        ):
            shell.user_ns.pop(name, None)


def test_relay_magics_connect_with_interpolated_secret_urls(
    shell: tuple[TestingShell, ScriptedRuntime],
    canary_env: Canaries,
    pg_url: str,
    mongo_service: str,
    debug_log: Path,
    evidence: Evidence,
    tmp_path: Path,
):
    """Five connections by magic (PostgreSQL real and with a wrong password in userinfo and
    in ``?password=``, MongoDB with a wrong login, a config file's ``${VAR}`` password), a
    question, the status table, refresh, history and usage; then two cells that must fail."""
    ip, model = shell
    ip.user_ns["pg_url"] = pg_url
    ip.user_ns["database_url"] = os.environ["DATABASE_URL"]
    ip.user_ns["mongo_url"] = os.environ["RELAY_MONGO_URL"]
    ip.user_ns["warehouse_url"] = os.environ["RELAY_WAREHOUSE_URL"]
    hostport = urlsplit(pg_url).netloc.rsplit("@", 1)[1]
    config = {
        "connectors": [
            {
                "type": "postgres",
                "id": "configured",
                "config": {
                    "url": f"postgresql+psycopg://relay_ro:${{RELAY_CFG_DB_PASSWORD}}@{hostport}/shop"
                },
            }
        ]
    }
    (tmp_path / "relay.config.json").write_text(json.dumps(config))
    ip.user_ns["config_path"] = str(tmp_path / "relay.config.json")
    # a wrong login fails at --connect (below); connected anyway from Python (check=False),
    # the turn's query is refused by the server, and that error is evidence too
    unchecked = "relay_nb.default_relay().connect({!r}, {}, check=False{})"
    cells = [
        "import relay_nb",
        "%relay --connect shop {pg_url} --tables orders,customers",
        unchecked.format("warehouse", "database_url", ""),
        unchecked.format("by_name", "warehouse_url", ""),
        "%relay --config {config_path}",
        "%%relay --out counted\nHow many orders, and what does the warehouse hold?",
        "%relay --refresh",
        # after the turn: pymongo retries a refused Mongo login for its whole server-selection
        # wait (10 s) on the next use, and the turn would wait for that schema read
        unchecked.format("events", "mongo_url", ", collections=['orders']"),
        "%relay --connectors",
        "%relay --history",
        "%relay --usage",
    ]
    failures = []
    for cell in cells:
        try:
            run = ip.run(cell)
        except Exception as exc:  # a cell that raises shows its message (and a traceback)
            failures.append(cell)
            evidence.add_exception(f"cell {cell!r}", exc)
            evidence.add(f"cell {cell!r}: rendered", "".join(_rendered(exc)))
            continue
        evidence.add(f"cell {cell!r}: printed", run.stdout)
        evidence.add(f"cell {cell!r}: displayed", json.dumps(run.outputs, default=str))
        evidence.add(f"cell {cell!r}: value", repr(run.result))
    assert failures == [], failures
    # cells that must fail — with a message that does not quote the secret either
    password = canary_env.url_only["DATABASE_URL password"]
    ip.user_ns["broken_url"] = os.environ["DATABASE_URL"].replace(hostport, "127.0.0.1:port")
    inline = {"connectors": [{**config["connectors"][0], "id": "inline"}]}
    inline["connectors"][0]["config"] = {
        "url": f"postgresql+psycopg://relay_ro:{quote(password, safe='')}@{hostport}/shop"
    }
    (tmp_path / "inline.json").write_text(json.dumps(inline))
    ip.user_ns["inline_path"] = str(tmp_path / "inline.json")
    for cell, error in (
        ("%relay --connect broken {broken_url}", RelayCellError),  # the port is no number
        ("%relay --config {inline_path}", RelayCellError),  # an inline password is refused
        # a wrong login is refused when connecting, the cause in one line
        ("%relay --connect warehouse2 {database_url}", RelayCellError),
        ("%relay --connect by_name2 warehouse_url", RelayCellError),
        (
            "relay_nb.default_relay().connect('events2', mongo_url, timeout_s=0.5)",
            ConnectorError,
        ),
    ):
        with pytest.raises(error) as raised:
            ip.run(cell)
        evidence.add_exception(f"cell {cell!r}", raised.value)
        evidence.add(f"cell {cell!r}: rendered", "".join(_rendered(raised.value)))
    session = facade._default
    assert session is not None and set(session.connectors) == {
        "shop",
        "warehouse",
        "events",
        "by_name",
        "configured",
    }
    turn = session.turns[-1]
    refused = {r.name: r.content for r in turn.tool_results if r.is_error}
    assert set(refused) == {"query_warehouse"}, refused
    assert "password authentication failed" in refused["query_warehouse"]
    assert ip.user_ns["counted"]["n"][0] > 0
    evidence.add("input history", "\n".join(ip.user_ns["In"]))
    evidence.add_all("prompt sent to the model", (r.model_dump_json() for r in model.requests))
    evidence.add_file(debug_log, "relay_nb DEBUG log")
    evidence.assert_clean(canary_env)


def _rendered(exc: BaseException) -> list[str]:
    """What a notebook shows for a failing cell: the exception's own rendering if it has
    one (RelayCellError prints one line), else the traceback."""
    render = getattr(exc, "_render_traceback_", None)
    return render() if render is not None else traceback.format_exception(exc)
