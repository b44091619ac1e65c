"""A scripted or replayed turn is labelled so everywhere (issue 18, item 5): the turn, the
usage line of the transcript and the HTML, the notebook metadata and the ledger, and its
cost reads as priced, not spent. A real answer is labelled as before."""

from __future__ import annotations

from pathlib import Path

from relay_nb import Relay, ScriptedRuntime
from relay_nb.notebook.view import turn_bundle
from relay_nb.runtime.replay import RecordingRuntime, ReplayRuntime
from relay_nb.views import describe_usage, model_label, turn_html, turn_text

ANSWER = [
    {
        "tool_calls": [
            {"name": "query_shop", "input": {"sql": "SELECT COUNT(*) AS n FROM products"}}
        ]
    },
    {"text": "20 products."},
]


def _ask(runtime, shop_url: str, ledger: Path):
    relay = Relay(runtime, ledger=ledger)
    relay.connect("shop", shop_url)
    try:
        turn = relay.ask("how many products?")
        report = relay.usage_report(by=["provider", "model"])
    finally:
        relay.close()
    return turn, report


def test_a_scripted_turn_says_so_everywhere(shop_url: str, tmp_path: Path) -> None:
    turn, report = _ask(ScriptedRuntime(ANSWER, model="claude-haiku-4-5"), shop_url, tmp_path / "l")
    assert turn.simulated == "scripted" and turn.model == "claude-haiku-4-5"
    line = turn_text(turn).splitlines()[-1]
    assert line.startswith("scripted model, priced as claude-haiku-4-5 · 2 calls · ")
    assert line.endswith(" (not spent)") and "(estimated)" in line
    assert line in turn_html(turn)
    _data, metadata = turn_bundle(turn)
    assert metadata["relay_nb"]["simulated"] == "scripted"
    assert report.to_dict("records")[0]["provider"] == "scripted"
    assert model_label("scripted", "scripted") == "scripted model"  # nothing to be priced as


def test_a_replayed_turn_says_so_and_a_real_one_does_not(shop_url: str, tmp_path: Path) -> None:
    recorder = RecordingRuntime(ScriptedRuntime(ANSWER, model="claude-sonnet-4-5"))
    live, _ = _ask(recorder, shop_url, tmp_path / "live")
    # as a real model's recording holds it: its provider, nothing simulated
    records = [
        record.model_copy(
            update={
                "result": record.result.model_copy(
                    update={"provider": "anthropic", "simulated": None}
                )
            }
        )
        for record in recorder.records
    ]
    replayed, report = _ask(ReplayRuntime(records), shop_url, tmp_path / "replayed")
    assert replayed.simulated == "replayed" and replayed.answer == live.answer
    line = turn_text(replayed).splitlines()[-1]
    assert line.startswith("replayed answer of claude-sonnet-4-5 · 2 calls · ")
    assert line.endswith(" (not spent)")
    assert report.to_dict("records")[0]["provider"] == "replayed"
    real = describe_usage(replayed.usage, "claude-sonnet-4-5")
    assert real.startswith("claude-sonnet-4-5 · ") and "not spent" not in real
