"""The HTTP connector through relay.connect and relay.config.json, as an analyst wires it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from http_live_server import LiveServer

from relay_nb import Relay, ScriptedRuntime
from relay_nb.connectors.http import HTTPConnector

SPEC = Path(__file__).parent / "specs" / "shop_openapi.json"


def test_relay_connect_builds_an_http_connector_from_a_url(api: LiveServer) -> None:
    relay = Relay(ScriptedRuntime(), ledger=False)
    shop = relay.connect("shop", api.base, openapi=str(SPEC), timeout_s=5.0)
    assert isinstance(shop, HTTPConnector) and shop.target == api.base
    assert shop.call("GET", "orders", {"status": "paid"}).row_count > 0  # type: ignore[attr-defined]
    assert api.paths("GET") == ["/v1/orders?status=paid"]
    status = relay.connector_status().set_index("id").loc["shop"]
    assert status["type"] == "http" and status["status"] == "ok"
    assert "GET /orders" in status["objects"]
    relay.close()


def test_a_config_file_wires_auth_from_the_environment_and_a_relative_openapi(
    api: LiveServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(SPEC, tmp_path / "shop_openapi.json")
    monkeypatch.setenv("SHOP_API_TOKEN", "tok-from-env-1234567")
    (tmp_path / "relay.config.json").write_text(
        json.dumps(
            {
                "connectors": [
                    {
                        "type": "http",
                        "id": "shop",
                        "config": {
                            "baseUrl": api.base,
                            "openApiUrl": "shop_openapi.json",
                            "auth": {"type": "bearer", "tokenEnv": "SHOP_API_TOKEN"},
                            "timeout_s": 5.0,
                        },
                    }
                ]
            }
        )
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the OpenAPI path is relative to the file, not the cwd
    relay = Relay(ScriptedRuntime(), ledger=False, config=tmp_path / "relay.config.json")
    shop = relay.connectors["shop"]
    assert "GET /orders" in shop.prompt_context()
    shop.call("GET", "echo-headers")  # type: ignore[attr-defined]
    (request,) = api.requests
    assert request.headers["authorization"] == "Bearer tok-from-env-1234567"
    assert "tok-from-env-1234567" not in shop.prompt_context() + repr(shop)
    relay.close()


def test_many_connect_cycles_leave_no_open_sockets(api: LiveServer) -> None:
    relay = Relay(ScriptedRuntime(), ledger=False)

    def cycle() -> None:
        relay.connect("shop", api.base, timeout_s=5.0).call("GET", "orders")  # type: ignore[attr-defined]
        relay.disconnect("shop")

    cycle()
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(10):
        cycle()
    assert len(os.listdir("/proc/self/fd")) <= before
    relay.close()
