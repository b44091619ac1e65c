"""%relay / %%relay through a real IPython shell: every option, interpolation, errors."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from relay_nb import Relay, ScriptedRuntime
from relay_nb.notebook.magics import RelayCellError, interpolate, parse_command
from relay_nb.notebook.view import NotebookTurn
from relay_nb.testing.shell import TestingShell

COUNT = "SELECT COUNT(*) AS n FROM products"


def query(sql: str) -> dict:
    return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]}


def test_a_question_is_shown_once_and_returned(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add(query(COUNT), {"text": "There are **20** products."})
    run = shell.run("%relay how many products do we sell?")
    assert isinstance(run.result, NotebookTurn) and run.result.answer.startswith("There are")
    (text,) = run.texts  # displayed by the magic, not a second time as Out
    assert text.splitlines()[0] == "Q: how many products do we sell?"
    # as the model wrote it: no fetch size (LIMIT 201) the guard added
    assert "SELECT COUNT(*) AS n FROM products\n" in text and "LIMIT" not in text
    assert "<strong>20</strong>" in run.htmls[0]
    assert model.requests[0].messages[-1].text() == "how many products do we sell?"


def test_assigning_the_turn_and_showing_it_later(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add({"text": "hello"})
    shell.run("t = %relay say hello")
    assert shell.user_ns["t"].answer == "hello"
    later = shell.run("t")
    assert later.texts and later.texts[0].startswith("Q: say hello")


def test_cell_magic_with_out_and_sql(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add(query(COUNT), {"text": "20"})
    shell.run("%%relay --out counts --sql\nhow many\nproducts?")
    assert int(shell.user_ns["counts"].iloc[0]["n"]) == 20
    assert shell.ip.rl_next_input == "%%relay_sql shop\nSELECT COUNT(*) AS n FROM products\n"
    assert model.requests[0].messages[-1].text() == "how many\nproducts?"


def test_interpolation_of_variables_inputs_and_outputs(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add({"text": "ok"})
    shell.run("region = 'EMEA'")
    shell.run("%relay revenue in {region} for {{all}} years")
    assert model.requests[-1].messages[-1].text() == "revenue in EMEA for {all} years"
    assert interpolate("{In[1]}", {"In": ["", "x = 1"]}) == "x = 1"
    assert interpolate("{Out[2]}", {"Out": {2: 42}}) == "42"
    with pytest.raises(UsageError, match="no variable 'nope'"):
        shell.run("%relay revenue in {nope}")
    with pytest.raises(UsageError, match="has no entry 9"):
        interpolate("{Out[9]}", {"Out": {}})
    assert interpolate("{os.system}", {}) == "{os.system}"  # never evaluated


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--frobnicate what?", "unknown option --frobnicate"),
        ("--out", "--out needs VAR"),
        ("--max-steps many what?", "--max-steps takes a whole number"),
        ("--max-cost cheap what?", "--max-cost takes dollars"),
        ("--out 1x what?", "--out takes a variable name"),
        ("--usage and a question", "--usage takes no question"),
        ("--usage --reset", "one of --usage, --reset"),
        ("", "no question"),
        ("--tables a,b what?", "--tables goes with --connect"),
        ("--model", "--model needs PROFILE"),
        ("--out x", "--out goes with a question"),
        ("--sql --out x", "--out and --sql go with a question"),
        ("--describe", "--describe needs TABLE"),
        ("--max-cost -1 what?", "--max-cost takes dollars above 0"),
        ("--usage --model x", "--usage takes no --model"),
        ("--connect a b --max-steps 3", "--connect takes no --max-steps"),
        ("--rows some", "--rows takes a whole number"),
    ],
)
def test_usage_errors(shell: TestingShell, relay: Relay, line: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        shell.run(f"%relay {line}")


def test_options_stop_at_the_question() -> None:
    command = parse_command("--skill sales what does --out mean in '--out VAR'?")
    assert command.options == {"skill": "sales"}
    assert command.question == "what does --out mean in '--out VAR'?"
    assert parse_command("-- --usage is a word here").question == "--usage is a word here"
    with pytest.raises(UsageError, match="only options on its line"):
        parse_command("--out x what", "cell body")


def test_per_question_options_reach_the_turn(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    relay.skill("sales", prompt="Sales rules.", connectors=["shop"])
    other = ScriptedRuntime([{"text": "from the other model"}])
    shell.user_ns["other"] = other
    model.add(query(COUNT), query(COUNT), {"text": "unused"})
    run = shell.run("%relay --skill sales --max-steps 1 count products")
    assert run.result.finish_reason == "max_steps" and "stopped: max_steps" in run.texts[0]
    assert "Sales rules." in model.requests[-1].system_text()


def test_connect_connectors_usage_history_reset(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime, shop_url: str
) -> None:
    out = shell.run(f"%relay --connect archive {shop_url} --tables products,orders --row-limit 5")
    assert "connected 'archive'" in out.stdout
    assert relay.connectors["archive"].row_limit == 5
    shown = shell.run("%relay --connectors")
    assert shown.result is None and "archive" in shown.htmls[0]
    assert list(relay.connector_status()["id"]) == ["shop", "archive"]
    model.add({"text": "first answer"})
    shell.run("%relay first question")
    assert (
        "session: 1 turn · scripted model, priced as claude-haiku-4-5"
        in shell.run("%relay --usage").stdout
    )
    history = shell.run("%relay --history").stdout
    assert history.splitlines() == ["[1] Q: first question", "    A: first answer"]
    assert "conversation reset" in shell.run("%relay --reset").stdout
    assert relay.history == []


def test_a_failed_turn_raises_a_short_error_after_showing_the_trace(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add({"error": {"code": "AUTHENTICATION_FAILED", "message": "bad API key; set it"}})
    with pytest.raises(RelayCellError, match="bad API key; set it") as caught:
        shell.run("%relay anything")
    assert caught.value._render_traceback_() == ["RelayError: bad API key; set it"]


def test_configuration_errors_are_short(shell: TestingShell, relay: Relay) -> None:
    with pytest.raises(RelayCellError, match="pip install 'relay-nb\\[postgres\\]'") as caught:
        shell.run("%relay --connect pg postgresql+asyncpg://me:hunter2@127.0.0.1/db")
    assert "hunter2" not in str(caught.value)


def test_config_traits(shell: TestingShell, relay: Relay, model: ScriptedRuntime) -> None:
    shell.run("%config RelayMagics.display_rows = 3")
    shell.run("%config RelayMagics.max_cost_usd = 0.000001")
    model.add(query("SELECT id FROM products"), {"text": "unused"})
    run = shell.run("%relay list products")
    assert run.result.finish_reason == "usage_cap" and model.remaining == 2
    shell.run("%config RelayMagics.max_cost_usd = None")
    run = shell.run("%relay list products")
    assert "first 3 of 20 rows" in run.htmls[0]


@pytest.mark.parametrize(
    ("mode", "typed", "ran"),
    [("ask", "y", True), ("ask", "", False), ("deny", None, False), ("allow", None, True)],
)
def test_approval_modes(
    shell: TestingShell,
    relay: Relay,
    model: ScriptedRuntime,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    typed: str | None,
    ran: bool,
) -> None:
    calls: list[str] = []
    prompts: list[str] = []

    @relay.tool(requires_approval=True)
    def wipe_cache(name: str) -> str:
        """Wipes a cache."""
        calls.append(name)
        return "wiped"

    def fake_input(prompt: str) -> str:
        prompts.append(prompt)
        assert typed is not None, "must not prompt"
        return typed

    monkeypatch.setattr("builtins.input", fake_input)
    shell.run(f"%config RelayMagics.approval = '{mode}'")
    model.add({"tool_calls": [{"name": "wipe_cache", "input": {"name": "x"}}]}, {"text": "ok"})
    shell.run("%relay wipe the x cache")
    assert calls == (["x"] if ran else [])
    if typed is not None:
        assert prompts == ["relay_nb: allow wipe_cache(name='x')? [y/N] "]


def test_questions_ending_in_a_question_mark_are_asked_not_looked_up(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add({"text": "a"}, {"text": "b"})
    run = shell.run("%relay which customers spent over $100?")
    assert run.result.answer == "a"
    assert model.requests[-1].messages[-1].text() == "which customers spent over $100?"
    shell.run("answer = %relay and last year?")
    assert shell.user_ns["answer"].answer == "b"
    assert shell.run("x = 1\nx?").stdout  # IPython's own help still works elsewhere


def test_asking_with_nothing_connected_says_how_to_connect(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    relay.disconnect("shop")
    with pytest.raises(RelayCellError, match="no data is connected; connect some first"):
        shell.run("%relay how many customers?")
    assert model.requests == []


def test_the_notebooks_dataframes_are_context_for_the_next_question(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add(query("SELECT id, name, country FROM customers ORDER BY id LIMIT 5"), {"text": "5"})
    shell.run("%relay --out first_five list five customers")
    model.add({"text": "They are from several countries."})
    shell.run("%relay where are the customers in first_five from?")
    system = model.requests[-1].system_text()
    assert '<context source="notebook_dataframes" title="first_five">' in system
    assert "first_five: DataFrame, 5 rows x 3 columns" in system


# -- settings alone on a line, %config on a running session, help ----------------------------

OTHER_MODEL = "openai-compatible:llama3.2@http://127.0.0.1:9/v1"  # built, never called here


def test_settings_alone_on_a_line_apply_to_every_later_question(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    run = shell.run("%relay --max-steps 1 --rows 3 --max-cost 0.5")
    assert run.stdout == (
        "for every question now: max_steps 8 -> 1, max_cost_usd None -> 0.5, rows 20 -> 3\n"
    )
    assert shell.run("%relay --max-steps 1 --rows 3").stdout == ""  # nothing changed
    model.add(query(COUNT), query(COUNT), {"text": "unused"})
    first = shell.run("%relay count products")
    second = shell.run("%relay list products")  # the settings hold for the next one too
    assert first.result.finish_reason == second.result.finish_reason == "max_steps"
    assert relay.settings.max_steps == 1


def test_a_model_set_once_is_the_sessions_and_a_wrong_one_changes_nothing(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    run = shell.run(f"%relay --model {OTHER_MODEL}")
    assert run.stdout == f"for every question now: model scripted -> {OTHER_MODEL}\n"
    assert relay.settings.model == OTHER_MODEL
    with pytest.raises(RelayCellError, match="nonsense") as caught:
        shell.run("%relay --model nonsense:x")
    assert "\n" not in str(caught.value) and relay.settings.model == OTHER_MODEL


def test_config_of_the_model_changes_the_running_session(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    shell.run(f"%config RelayMagics.model = '{OTHER_MODEL}'")
    assert relay.settings.model == OTHER_MODEL  # before, ignored once the session existed


def test_help_lists_every_option_and_is_the_magics_docstring(
    shell: TestingShell, relay: Relay
) -> None:
    from relay_nb.notebook.command import HELP, OPTIONS

    text = shell.run("%relay --help").stdout
    assert text == HELP + "\n"
    assert all(name in text for name in OPTIONS) and "Examples:" in text
    assert shell.ip.find_line_magic("relay").__doc__ == HELP  # what %relay? shows
    with pytest.raises(UsageError, match="%relay --help lists them"):
        shell.run("%relay --hlep")


def test_connectors_with_nothing_connected_says_how_to_connect(
    shell: TestingShell, relay: Relay
) -> None:
    relay.disconnect("shop")
    assert shell.run("%relay --connectors").stdout == (
        "nothing is connected yet: %relay --connect NAME URL_OR_VARIABLE\n"
    )


def test_an_unknown_variable_in_an_option_names_the_option(
    shell: TestingShell, relay: Relay
) -> None:
    with pytest.raises(UsageError, match=r"\{nope\} in --connect: no variable 'nope'"):
        shell.run("%relay --connect db {nope}")


def test_a_turn_as_a_cells_last_line_shows_its_trace(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    """``relay.ask(...)`` as the last line: a one-line text repr, and the trace as HTML."""
    model.add(query(COUNT), {"text": "There are 20 products."})
    shell.user_ns["relay"] = relay
    turn = shell.run("relay.ask('how many products?')").result  # the cell's Out
    data, _metadata = shell.ip.display_formatter.format(turn)  # what the Out shows
    text, page = data["text/plain"], data["text/html"]
    assert "\n" not in text and text.startswith("TurnResult(question='how many products?'")
    assert 'class="relay-turn ' in page and "There are 20 products." in page


def test_load_ext_in_a_cell_after_a_load_outside_one_says_nothing(shell: TestingShell) -> None:
    """Loaded by a profile's ``extensions`` or a startup file (no cell ran it), then by the
    notebook's first cell: no "already loaded … use %reload_ext"."""
    shell.ip.run_line_magic("load_ext", "relay_nb")  # outside any cell
    assert "relay_nb" in shell.ip.extension_manager.loaded
    run = shell.run("%load_ext relay_nb")
    assert run.stdout == "" and run.outputs == []
    assert shell.run("%load_ext relay_nb").stdout == ""  # and run again
