"""``relay-nb demo``: the sample database, the offline model, the command and its notebook."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from relay_nb.demo.data import (
    APPLICATION_ID,
    DEMO_TABLES,
    ORDER_DAYS,
    build_shop_database,
    generate_shop,
)
from relay_nb.demo.script import demo_questions, parse_result, scripted_demo_model
from relay_nb.errors import ConfigurationError

TODAY = dt.date(2026, 3, 14)
ROOT = Path(__file__).resolve().parents[1]


def _offline_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RELAY_MODEL", "ANTHROPIC_API_KEY")}
    env.update(extra)
    return env


def _run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(
        [sys.executable, "-m", "relay_nb.cli", "demo", *args],
        cwd=cwd,
        env=env or _offline_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _query(path: Path, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(path) as connection:
        return connection.execute(sql, params).fetchall()


def _eur(value: float) -> str:
    return f"€{value:,.2f}"


def _expected_answers(db: Path, last_year: int) -> dict[str, list[str]]:
    """Facts the three answers must state, read straight from the database."""
    (total,) = _query(
        db,
        "SELECT ROUND(SUM(total), 2) FROM orders WHERE status = 'paid' "
        "AND ordered_at >= ? AND ordered_at < ?",
        f"{last_year}-01-01",
        f"{last_year + 1}-01-01",
    )[0]
    top = _query(
        db,
        "SELECT c.name, ROUND(SUM(o.total), 2) AS r FROM orders o JOIN customers c "
        "ON c.id = o.customer_id WHERE o.status = 'paid' GROUP BY c.id ORDER BY r DESC LIMIT 5",
    )
    refunds = _query(
        db,
        "SELECT p.category, COUNT(DISTINCT o.id) FROM order_items i JOIN orders o "
        "ON o.id = i.order_id JOIN products p ON p.id = i.product_id "
        "WHERE o.status = 'refunded' GROUP BY p.category ORDER BY 2 DESC, 1",
    )
    return {
        "revenue": [f"Revenue in {last_year} was {_eur(total)}"],
        "customers": [f"1. {top[0][0]}", _eur(top[0][1]), f"5. {top[4][0]}", _eur(top[4][1])],
        "refunds": [f"{refunds[0][0]} has the most refunds: {refunds[0][1]} refunded orders"],
    }


# -- the generator -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    return build_shop_database(tmp_path_factory.mktemp("demo") / "shop.sqlite", today=TODAY)


def test_row_counts(shop):
    counts = {t: _query(shop.path, f"SELECT COUNT(*) FROM {t}")[0][0] for t in DEMO_TABLES}
    assert counts == shop.counts
    assert counts["customers"] == 900 and counts["products"] == 44
    assert counts["orders"] == 3200
    assert 3200 < counts["order_items"] <= 4 * 3200
    assert sum(counts.values()) > 5000  # "a few thousand rows"
    assert _query(shop.path, "SELECT COUNT(DISTINCT category) FROM products")[0][0] == 6
    assert _query(shop.path, "SELECT COUNT(DISTINCT country) FROM customers")[0][0] == 10


def test_orders_span_the_last_two_years(shop):
    first, last = _query(shop.path, "SELECT MIN(ordered_at), MAX(ordered_at) FROM orders")[0]
    first_day = dt.date.fromisoformat(first[:10])
    last_day = dt.date.fromisoformat(last[:10])
    assert TODAY - dt.timedelta(days=ORDER_DAYS) <= first_day <= TODAY - dt.timedelta(days=700)
    assert TODAY - dt.timedelta(days=3) <= last_day < TODAY  # nothing in the future
    months = _query(shop.path, "SELECT COUNT(DISTINCT strftime('%Y-%m', ordered_at)) FROM orders")
    assert months[0][0] >= 24  # every month of the two years has orders
    last_year = _query(
        shop.path,
        "SELECT COUNT(DISTINCT strftime('%m', ordered_at)) FROM orders WHERE ordered_at LIKE ?",
        f"{shop.last_year}-%",
    )
    assert last_year[0][0] == 12  # "last year" is always a whole year


def test_statuses_and_something_to_find(shop):
    statuses = dict(_query(shop.path, "SELECT status, COUNT(*) FROM orders GROUP BY status"))
    assert set(statuses) == {"paid", "refunded", "cancelled"}
    assert statuses["paid"] > 0.8 * sum(statuses.values())
    # the holidays sell: December beats February in the last full year
    by_month = dict(
        _query(
            shop.path,
            "SELECT strftime('%m', ordered_at), SUM(total) FROM orders WHERE status = 'paid' "
            "AND ordered_at LIKE ? GROUP BY 1",
            f"{shop.last_year}-%",
        )
    )
    assert by_month["12"] > 1.5 * by_month["02"]
    # machines come back more often than beans
    rates = dict(
        _query(
            shop.path,
            "SELECT p.category, AVG(o.status = 'refunded') FROM order_items i "
            "JOIN orders o ON o.id = i.order_id JOIN products p ON p.id = i.product_id "
            "GROUP BY p.category",
        )
    )
    assert max(rates, key=rates.get) == "Equipment"


def test_referential_integrity(shop):
    path = shop.path
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    orphans = _query(
        path,
        "SELECT COUNT(*) FROM order_items i LEFT JOIN orders o ON o.id = i.order_id "
        "LEFT JOIN products p ON p.id = i.product_id WHERE o.id IS NULL OR p.id IS NULL",
    )
    assert orphans == [(0,)]
    assert _query(
        path,
        "SELECT COUNT(*) FROM orders o LEFT JOIN customers c ON c.id = o.customer_id "
        "WHERE c.id IS NULL OR o.ordered_at < c.signup_date",
    ) == [(0,)]
    assert _query(
        path,
        "SELECT COUNT(*) FROM orders o WHERE NOT EXISTS "
        "(SELECT 1 FROM order_items i WHERE i.order_id = o.id)",
    ) == [(0,)]
    mismatched = _query(
        path,
        "SELECT COUNT(*) FROM orders o JOIN (SELECT order_id, SUM(quantity * unit_price) AS s "
        "FROM order_items GROUP BY order_id) t ON t.order_id = o.id "
        "WHERE ABS(o.total - t.s) > 0.005",
    )
    assert mismatched == [(0,)]
    assert _query(path, "SELECT COUNT(DISTINCT email) = COUNT(*) FROM customers") == [(1,)]


def test_generation_is_deterministic(tmp_path):
    assert generate_shop(today=TODAY) == generate_shop(today=TODAY)
    assert generate_shop(today=TODAY) != generate_shop(today=TODAY, seed=1)

    def dump(path: Path) -> str:
        with sqlite3.connect(path) as connection:
            text = "\n".join(connection.iterdump())
        return hashlib.sha256(text.encode()).hexdigest()

    a = build_shop_database(tmp_path / "a.sqlite", today=TODAY)
    b = build_shop_database(tmp_path / "b.sqlite", today=TODAY)
    assert dump(a.path) == dump(b.path)
    assert a.counts == b.counts


def test_build_replaces_its_own_file_and_refuses_others(tmp_path):
    target = tmp_path / "shop.sqlite"
    build_shop_database(target, today=TODAY)
    assert _query(target, "PRAGMA application_id") == [(APPLICATION_ID,)]
    build_shop_database(target, today=TODAY + dt.timedelta(days=1))  # a demo file: replaced
    assert _query(target, "PRAGMA user_version") == [(20260315,)]
    assert [p.name for p in tmp_path.iterdir()] == ["shop.sqlite"]  # no scratch file left

    foreign = tmp_path / "mine.sqlite"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE precious (x)")
    with pytest.raises(ConfigurationError, match="not a relay-nb demo database"):
        build_shop_database(foreign)
    assert _query(foreign, "SELECT name FROM sqlite_master") == [("precious",)]
    with pytest.raises(ConfigurationError, match="does not exist"):
        build_shop_database(tmp_path / "missing" / "shop.sqlite")
    with pytest.raises(ConfigurationError, match="is a directory"):
        build_shop_database(tmp_path)


# -- the offline model ---------------------------------------------------------------------------


def _relay_for(shop):
    from relay_nb import Relay

    relay = Relay(scripted_demo_model(shop), ledger=False)
    relay.connect("shop", shop.url, tables=list(DEMO_TABLES), description=shop.description)
    return relay


def test_scripted_answers_come_from_the_query_results(tmp_path):
    """Another seed, other numbers: the answers follow the data, nothing is canned."""
    other = build_shop_database(tmp_path / "other.sqlite", today=TODAY, seed=99)
    expected = _expected_answers(other.path, other.last_year)
    relay = _relay_for(other)
    try:
        # any order, and again: the model reacts to the request, it does not replay a list
        questions = demo_questions(other)
        turns = [relay.ask(q) for q in (questions[2], questions[0], questions[1], questions[0])]
    finally:
        relay.close()
    for turn, kind in zip(turns, ("refunds", "revenue", "customers", "revenue"), strict=True):
        assert turn.finish_reason == "stop"
        assert turn.queries, "the answer must come after a real query"
        for fact in expected[kind]:
            assert fact in turn.answer, (fact, turn.answer)
        assert turn.usage.estimated and turn.usage.cost_usd and turn.usage.cost_usd > 0
        assert turn.model == "claude-haiku-4-5"


def test_scripted_model_parameters_and_unknown_questions(shop):
    relay = _relay_for(shop)
    try:
        top3 = relay.ask("Who are our top 3 customers by revenue?")
        year = relay.ask(f"What was our revenue by month in {shop.last_year - 1}?")
        other = relay.ask("What is the weather in Paris?")
        # names a word of a scripted question, asks something else: no top-5 table for it
        germany = relay.ask("how many customers are in Germany?")
    finally:
        relay.close()
    assert len(top3.df) == 3 and "top 3 customers" in top3.answer
    assert f"in {shop.last_year - 1} was" in year.answer
    assert not other.tool_calls and "scripted model" in other.answer
    # no numbers without a query (the model it suggests is the only digits)
    assert not re.search(r"\d", other.answer.replace("anthropic:claude-sonnet-4-6", ""))
    assert not germany.tool_calls and "cannot answer that" in germany.answer
    assert "%relay --model" in germany.answer
    assert germany.simulated == "scripted" and top3.simulated == "scripted"


def test_parse_result_reads_the_preview_the_model_sees():
    content = '2 rows\ncolumns: a str, b int64\na,b\n"x, y",1\nz,2\n… showing 2 of 9 rows'
    assert parse_result(content) == [{"a": "x, y", "b": "1"}, {"a": "z", "b": "2"}]


def test_turn_text_lays_out_sql_and_wraps_answers_only_when_asked(shop):
    from relay_nb.views import turn_text

    relay = _relay_for(shop)
    try:
        turn = relay.ask(demo_questions(shop)[1])
    finally:
        relay.close()
    plain = turn_text(turn)
    assert "\n    SELECT c.name, c.country" in plain  # SQL as it ran, on one line
    shaped = turn_text(turn, format_sql=lambda sql: sql.replace(" FROM ", "\nFROM "), width=60)
    assert "\n    FROM orders AS o" in shaped
    answer = shaped.split("\nA: ", 1)[1].split("\nscripted model, priced as claude-haiku-4-5")[0]
    assert all(len(line) <= 60 for line in answer.splitlines())
    assert turn_text(turn) == plain  # deterministic


# -- the command ---------------------------------------------------------------------------------


def test_demo_runs_offline_end_to_end(tmp_path):
    db = tmp_path / "shop.sqlite"
    result = _run_cli("--db", str(db), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # the first thing it says: scripted, no model called, estimated tokens
    first = out.split("\n\n", 1)[0]
    assert first.startswith("relay-nb demo · offline")
    for words in ("ScriptedRuntime", "no model is called", "estimated"):
        assert words in " ".join(first.split())
    shop_today = dt.datetime.strptime(str(_query(db, "PRAGMA user_version")[0][0]), "%Y%m%d")
    last_year = shop_today.year - 1
    assert out.count("── Question ") == 3
    assert f"Q: What was our revenue by month in {last_year}?" in out
    # the SQL of each tool call, laid out, and its real result rows
    assert "SELECT strftime('%Y-%m', ordered_at) AS month," in out  # as written
    assert "JOIN customers AS c" in out and "FROM order_items AS oi" in out
    top_name = _query(
        db,
        "SELECT c.name FROM orders o JOIN customers c ON c.id = o.customer_id "
        "WHERE o.status = 'paid' GROUP BY c.id ORDER BY SUM(o.total) DESC LIMIT 1",
    )[0][0]
    assert re.search(rf"^\s+{re.escape(top_name)}\s+\w\w\s+\d+\s+[\d.]+$", out, re.M)
    flat = " ".join(out.split())
    for facts in _expected_answers(db, last_year).values():
        for fact in facts:
            assert fact in flat, fact
    label = r"scripted model, priced as claude-haiku-4-5"
    cost_lines = re.findall(
        rf"^{label} · 2 calls · .* \(estimated\) · \$\d+\.\d{{4}} \(not spent\)$", out, re.M
    )
    assert len(cost_lines) == 3
    assert re.search(
        rf"^3 questions in [\d.]+ s · {label} · .* · \$\d+\.\d{{4}} \(not spent\)$", out, re.M
    )
    assert str(db) in out


def test_demo_with_an_api_key_uses_the_real_runtime(tmp_path):
    """ANTHROPIC_API_KEY set: Relay(model=None) picks Anthropic (here a local stub server)."""
    from relay_nb.testing.anthropic_stub import AnthropicStub, MessageReply, ToolUse

    with AnthropicStub() as stub:
        for sql, text in (
            ("SELECT COUNT(*) AS n FROM orders", "Counted."),
            ("SELECT COUNT(*) AS n FROM customers", "Counted again."),
            ("SELECT COUNT(*) AS n FROM products", "Done."),
        ):
            stub.enqueue(
                MessageReply(
                    tool_uses=[ToolUse(name="query_shop", input={"sql": sql})],
                    model="claude-sonnet-4-6",
                    input_tokens=1500,
                    output_tokens=40,
                ),
                MessageReply(text=text, model="claude-sonnet-4-6", input_tokens=1600),
            )
        env = _offline_env(
            ANTHROPIC_API_KEY="sk-test-demo",
            ANTHROPIC_BASE_URL=stub.base_url,
            RELAY_MODEL_REQUESTS="loopback",
        )
        result = _run_cli("--db", str(tmp_path / "shop.sqlite"), cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(
        "relay-nb demo · model anthropic (routed by tier), from ANTHROPIC_API_KEY"
    )
    assert "ScriptedRuntime" not in out and "sk-test-demo" not in out
    assert "A: Counted again." in out
    assert re.search(
        r"^claude-sonnet-4-6 · 2 calls · 3,100 in / 47 out tokens · \$0\.\d{4}$", out, re.M
    )
    assert [r.body["model"] for r in stub.requests] == ["claude-sonnet-4-6"] * 6


@pytest.mark.slow  # a real kernel runs the notebook: ~12 s (tests/test_wheel.py runs it too)
def test_demo_notebook_is_written_and_executed(tmp_path):
    result = _run_cli("--notebook", cwd=tmp_path, timeout=240)
    assert result.returncode == 0, result.stderr + result.stdout
    path = tmp_path / "relay_nb_quickstart.ipynb"
    assert f"Notebook: {path}" in result.stdout
    # where it writes is said before it writes
    assert f"Writing {path.name} in the current directory ({tmp_path})" in result.stdout
    assert result.stdout.startswith("relay-nb demo · offline")
    db = tmp_path / "relay_nb_quickstart.sqlite"
    assert db.exists()
    notebook = json.loads(path.read_text(encoding="utf-8"))
    sources = ["".join(cell["source"]) for cell in notebook["cells"]]
    assert "%load_ext relay_nb" in sources
    assert any(s.startswith("%relay ") for s in sources)
    assert any(s.startswith("%%relay --out top") for s in sources)
    texts = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", output
            data = output.get("data", {}).get("text/plain") or output.get("text") or ""
            texts.append("".join(data))
    flat = " ".join(" ".join(texts).split())
    user_version = _query(db, "PRAGMA user_version")[0][0]
    last_year = int(str(user_version)[:4]) - 1
    for facts in _expected_answers(db, last_year).values():
        for fact in facts:
            assert fact in flat, fact
    assert "session: 3 turns · scripted model, priced as claude-haiku-4-5" in flat
    # a second run replaces what it wrote itself
    again = _run_cli("--notebook", cwd=tmp_path, timeout=240)
    assert again.returncode == 0, again.stderr


def test_a_failing_model_stops_the_demo_with_its_error(tmp_path):
    """The key is set but model requests are off (as in this test session): say why, stop."""
    env = _offline_env(ANTHROPIC_API_KEY="sk-test-demo", RELAY_MODEL_REQUESTS="none")
    result = _run_cli("--db", str(tmp_path / "shop.sqlite"), cwd=tmp_path, env=env)
    assert result.returncode == 1
    out = " ".join(result.stdout.split())
    assert "stopped: error" in out and "error: real model requests are disabled here" in out
    assert "Stopping here" in out and "Question 2 of 3" not in out
    assert "1 question in" in out and "sk-test-demo" not in out


@pytest.mark.slow  # a real kernel: ~5 s
def test_a_failing_notebook_is_still_written_and_named(tmp_path):
    env = _offline_env(ANTHROPIC_API_KEY="sk-test-demo", RELAY_MODEL_REQUESTS="none")
    result = _run_cli("--notebook", "q.ipynb", cwd=tmp_path, env=env, timeout=240)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("relay-nb: the notebook stopped with ")
    assert "real model requests are disabled" in line
    assert line.endswith(f"see {tmp_path / 'q.ipynb'}")
    notebook = json.loads((tmp_path / "q.ipynb").read_text(encoding="utf-8"))
    assert "model = None" in "".join(notebook["cells"][1]["source"])
    errors = [
        o for c in notebook["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"
    ]
    assert errors  # the traceback is in the notebook, for the user to read


def test_notebook_tools_missing_is_a_short_error(tmp_path, monkeypatch, capsys):
    from relay_nb.cli import main

    monkeypatch.setitem(sys.modules, "nbclient", None)  # as if not installed
    code = main(["demo", "--notebook", str(tmp_path / "q.ipynb")])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.strip() == (
        "relay-nb: relay-nb demo --notebook needs nbclient to execute the notebook: "
        "pip install 'relay-nb[notebook]'"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--db", "{tmp}/no/such/dir/shop.sqlite"], "does not exist"),
        (["--db", "{tmp}"], "is a directory"),
        (["--db", "{tmp}/mine.sqlite"], "is not a relay-nb demo database"),
        (["--model", "nonsense"], "is not a profile"),
        (["--notebook", "{tmp}/mine.ipynb"], "was not written by relay-nb demo"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, args, message):
    (tmp_path / "mine.sqlite").write_text("my own data")
    (tmp_path / "mine.ipynb").write_text('{"cells": [], "metadata": {}}')
    result = _run_cli(*(a.format(tmp=tmp_path) for a in args), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""  # refused before anything is printed or built
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("relay-nb: ") and message in lines[0]
    assert "Traceback" not in result.stderr
    assert (tmp_path / "mine.sqlite").read_text() == "my own data"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.ipynb", "mine.sqlite"]


# -- layering ------------------------------------------------------------------------------------


def test_importing_the_cli_and_demo_package_stays_light():
    code = (
        "import sys, relay_nb, relay_nb.cli, relay_nb.demo; "
        "heavy = ['pydantic', 'pandas', 'sqlalchemy', 'sqlglot', 'IPython', 'nbclient', "
        "'relay_nb.demo.run', 'relay_nb.notebook']; "
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_demo_may_not_import_the_notebook_layer(tmp_path):
    import shutil

    shutil.copytree(
        ROOT / "relay_nb", tmp_path / "relay_nb", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "relay_nb" / "demo" / "run.py"
    target.write_text(target.read_text() + "\nimport relay_nb.notebook  # planted\n")
    result = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "relay_nb.demo is not allowed to import relay_nb.notebook" in result.stdout
