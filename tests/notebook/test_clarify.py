"""The model asks back: the ``clarify`` tool, answered by a button per option in the live
view, by a numbered input() prompt where buttons cannot work, and not offered at all where
nobody can answer. A real turn waits while another thread clicks, as the kernel's thread does
(tests/browser/test_clarify_jupyterlab.py does it in a real JupyterLab)."""

from __future__ import annotations

import threading
import time

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.agent.clarify import ClarifyRequest
from relay_nb.notebook.approval import no_events
from relay_nb.notebook.clarify import ButtonClarifier, choose_with_input, clarifier_for
from relay_nb.notebook.live import LiveTurnView
from relay_nb.runtime.types import Usage
from relay_nb.testing.shell import TestingShell

OPTIONS = ["calendar quarter", "fiscal quarter"]
ASK = {
    "tool_calls": [
        {
            "name": "clarify",
            "input": {"question": "Which quarter do you mean?", "options": OPTIONS},
        }
    ]
}


def new_view() -> LiveTurnView:
    return LiveTurnView("revenue", max_rows=5, session_usage=Usage(input_tokens=0, output_tokens=0))


def option_buttons(view: LiveTurnView) -> dict[str, object]:
    found: dict[str, object] = {}
    stack = list(view.calls.children)
    while stack:
        widget = stack.pop()
        if getattr(widget, "description", None) in OPTIONS:
            found[widget.description] = widget
        stack.extend(getattr(widget, "children", ()))
    return found


def click_when_shown(view: LiveTurnView, label: str) -> threading.Thread:
    def run() -> None:
        deadline = time.monotonic() + 10
        while label not in option_buttons(view) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        option_buttons(view)[label].click()

    thread = threading.Thread(target=run, name="clicker")
    thread.start()
    return thread


def test_a_click_answers_the_question_and_the_trace_keeps_both(
    relay: Relay, model: ScriptedRuntime
) -> None:
    model.add(ASK, {"text": "Fiscal Q3 revenue was …"})
    view = new_view()
    clicker = click_when_shown(view, "fiscal quarter")
    turn = relay.ask(
        "revenue last quarter",
        clarifier=ButtonClarifier(view, timeout_s=10, events=no_events),
        on_event=view.on_event,
    )
    clicker.join()
    (result,) = turn.tool_results
    assert result.content == "The user chose: fiscal quarter" and not result.is_error
    assert result.input == {"question": "Which quarter do you mean?", "options": OPTIONS}
    assert "The user chose: fiscal quarter" in str(model.requests[-1].messages[-1])
    assert view.calls.children[0].get_title(0) == "[1] clarify · you chose fiscal quarter · ok"
    assert all(button.disabled for button in option_buttons(view).values())
    from relay_nb.views import turn_html, turn_text

    assert "Which quarter do you mean?" in turn_html(turn)
    assert "The user chose: fiscal quarter" in turn_text(turn)
    # the reading the answer rests on is shown on the answer, not only inside the folded step
    reading = "<b>You chose: fiscal quarter (asked: Which quarter do you mean?)</b>"
    html = turn_html(turn)
    assert reading in html and html.index(reading) < html.index('class="relay-answer"')
    lines = turn_text(turn).splitlines()
    chose = lines.index("You chose: fiscal quarter (asked: Which quarter do you mean?)")
    assert lines[chose + 1].startswith("A: Fiscal Q3 revenue")


def test_no_click_in_time_is_no_answer_and_the_model_is_told_to_choose(
    relay: Relay, model: ScriptedRuntime
) -> None:
    model.add(ASK, {"text": "Assuming calendar quarters: …"})
    view = new_view()
    turn = relay.ask(
        "revenue last quarter",
        clarifier=ButtonClarifier(view, timeout_s=0.3, events=no_events),
        on_event=view.on_event,
    )
    (result,) = turn.tool_results
    assert result.content.startswith("No answer from the user. Choose the most likely meaning")
    assert "no answer within 0.3 s" in view.calls.children[0].get_title(0)
    from relay_nb.views import turn_text

    said = "Nobody answered 'Which quarter do you mean?': the model picked a reading"
    assert said in turn_text(turn)


def test_without_a_clarifier_the_model_is_not_offered_the_tool(
    relay: Relay, model: ScriptedRuntime
) -> None:
    model.add({"text": "ok"}, {"text": "ok"})
    relay.ask("revenue last quarter")
    assert "clarify" not in [tool.name for tool in model.requests[-1].tools]
    relay.ask("revenue last quarter", clarifier=lambda request: None)
    assert "clarify" in [tool.name for tool in model.requests[-1].tools]


@pytest.mark.parametrize(
    ("clarifier", "expected"),
    [
        (lambda request: request.options[1], "The user chose: fiscal quarter"),
        (lambda request: 1 / 0, "No answer from the user."),  # a failing clarifier: no answer
    ],
)
def test_any_callable_answers_and_a_failing_one_is_no_answer(
    relay: Relay, model: ScriptedRuntime, clarifier, expected: str
) -> None:
    model.add(ASK, {"text": "ok"})
    turn = relay.ask("revenue last quarter", clarifier=clarifier)
    assert turn.tool_results[0].content.startswith(expected)


def test_more_than_four_options_go_back_to_the_model_as_its_mistake(
    relay: Relay, model: ScriptedRuntime
) -> None:
    many = {
        "tool_calls": [{"name": "clarify", "input": {"question": "?", "options": list("abcde")}}]
    }
    asked: list[ClarifyRequest] = []
    model.add(many, {"text": "ok"})
    turn = relay.ask("revenue", clarifier=lambda request: asked.append(request))
    (result,) = turn.tool_results
    assert result.is_error and "options" in result.content and asked == []


def test_the_magic_asks_with_a_numbered_prompt_without_a_kernel(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    magics = shell.ip.magics_manager.registry["RelayMagics"]
    assert clarifier_for(new_view(), timeout_s=1) is choose_with_input  # no kernel: input()
    prompts: list[str] = []
    monkeypatch.setattr("builtins.input", lambda p: prompts.append(p) or "2")
    model.add(ASK, {"text": "Fiscal it is."})
    shell.run("%relay revenue last quarter")
    assert relay.turns[-1].tool_results[0].content == "The user chose: fiscal quarter"
    assert "[1] calendar quarter  [2] fiscal quarter" in prompts[0]
    shell.run("%config RelayMagics.clarify = False")
    try:
        model.add({"text": "ok"})
        shell.run("%relay revenue last quarter")
        assert "clarify" not in [tool.name for tool in model.requests[-1].tools]
    finally:
        magics.clarify = True


def test_a_run_nobody_answers_offers_no_clarify(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("relay_nb.notebook.clarify.takes_no_input", lambda: True)
    assert clarifier_for(new_view(), timeout_s=1) is None


def test_options_that_are_blank_or_the_same_go_back_to_the_model(
    relay: Relay, model: ScriptedRuntime
) -> None:
    same = {
        "tool_calls": [{"name": "clarify", "input": {"question": "?", "options": ["a", " a "]}}]
    }
    asked: list[ClarifyRequest] = []
    model.add(same, {"text": "ok"})
    turn = relay.ask("revenue", clarifier=lambda request: asked.append(request))
    (result,) = turn.tool_results
    assert result.is_error and "2 to 4 different, non-empty options" in result.content
    assert asked == []  # nobody was asked to choose between one thing
