"""A scripted or replayed turn is labelled so everywhere (issue 18, item 5): the turn, the
usage line of the transcript and the HTML, the notebook metadata and the ledger, and its
cost reads as priced, not spent. A real answer is labelled as before."""

from __future__ import annotations

from pathlib import Path

from relay_nb import InvocationResult, Relay, ScriptedRuntime, Usage
from relay_nb.markup import keep_dollars
from relay_nb.notebook.view import turn_bundle
from relay_nb.runtime.base import BaseRuntime
from relay_nb.runtime.replay import RecordingRuntime, ReplayRuntime
from relay_nb.runtime.types import Capabilities
from relay_nb.testing.shell import TestingShell
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
    assert keep_dollars(line) in turn_html(turn)
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


def test_a_scripted_turn_whose_calls_all_failed_is_still_labelled(
    shop_url: str, tmp_path: Path
) -> None:
    turn, report = _ask(ScriptedRuntime([], model="claude-haiku-4-5"), shop_url, tmp_path / "l")
    assert turn.finish_reason == "error" and turn.simulated == "scripted"
    assert "scripted model" in turn_text(turn).splitlines()[-1]
    assert report.to_dict("records")[0]["provider"] == "scripted"
    recorder = RecordingRuntime(ScriptedRuntime(ANSWER, model="claude-haiku-4-5"))
    _ask(recorder, shop_url, tmp_path / "r")
    # a recording keeps no label (the replayer adds it), in the format older readers take
    assert all("simulated" not in record.result.model_fields_set for record in recorder.records)
    assert all(record.result.simulated is None for record in recorder.records)


class _LocalModel(BaseRuntime):
    """A runtime that is not a stand-in: what a local server would answer, priced as Haiku."""

    id = "local"
    provider = "local"

    def capabilities(self) -> Capabilities:
        return Capabilities(
            structured_tools=True,
            streaming=False,
            abort=True,
            usage=True,
            structured_tools_fidelity="native",
            output_token_limit_fidelity="native",
        )

    async def _invoke(self, request, *, on_text=None) -> InvocationResult:
        return InvocationResult(
            provider="local",
            model="claude-haiku-4-5",
            model_source="provider-reported",
            output_text="a real answer",
            usage=Usage(input_tokens=1000, output_tokens=10),
        )


def test_usage_of_a_session_that_mixed_both_says_which_is_which(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add({"text": "scripted answer"})
    shell.run("%relay first, scripted")
    real = relay.ask("second, real", model=_LocalModel())
    assert real.simulated is None and real.usage.cost_usd
    line = shell.run("%relay --usage").stdout.strip()
    scripted = relay.turns[0].usage.cost_usd
    assert line.startswith("session: 2 turns · claude-haiku-4-5 · ")  # the last turn's model
    assert line.endswith(f"(of which ${scripted:.4f} for 1 scripted or replayed, not spent)")
    model.add({"text": "scripted again"})
    shell.run("%relay third, scripted")  # the last turn scripted: the total is still mixed
    line = shell.run("%relay --usage").stdout.strip()
    assert line.count("not spent") == 1 and "for 2 scripted or replayed, not spent)" in line
