"""The relay-nb console script, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RELAY_NB = Path(sys.executable).with_name("relay-nb")


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RELAY_NB), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RELAY_MODEL_REQUESTS": "none", **env},
    )


def test_invoke_scripted_prints_answer_and_receipt():
    out = run("invoke", f"scripted:{ROOT / 'examples/hello_script.json'}", "hello?")
    assert out.returncode == 0, out.stderr
    assert "scripted runtime" in out.stdout
    assert "~" in out.stderr and "cost unknown" in out.stderr  # estimated tokens, no made-up cost


def test_invoke_json_and_stream(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            [{"text": "streamed answer"}, {"tool_calls": [{"name": "q", "input": {"a": 1}}]}]
        )
    )
    streamed = run("invoke", f"scripted:{script}", "x", "--stream")
    assert streamed.stdout.strip() == "streamed answer"
    as_json = run("invoke", f"scripted:{script}", "x", "--json")
    assert json.loads(as_json.stdout)["output_text"] == "streamed answer"


def test_conformance_command_exit_codes(tmp_path):
    ok = run("conformance", f"scripted:{ROOT / 'examples/hello_script.json'}")
    assert ok.returncode == 0 and "conforms" in ok.stdout
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    bad = run("conformance", f"scripted:{empty}", "--json")
    assert bad.returncode == 1
    report = json.loads(bad.stdout)
    assert report["passed"] is False
    assert any(
        c["name"] == "invocation" and "RUNTIME_FAILURE" in c["detail"] for c in report["checks"]
    )


def test_errors_are_one_line_without_traceback():
    out = run("invoke", "nonsense", "x")
    assert out.returncode == 2
    assert out.stderr.startswith("relay-nb: ") and "Traceback" not in out.stderr
    blocked = run(
        "invoke", "anthropic:claude-haiku-4-5", "x", ANTHROPIC_API_KEY="sk-test-123456789"
    )
    assert blocked.returncode == 2 and "disabled" in blocked.stderr
    assert "sk-test-123456789" not in blocked.stderr


def test_bad_numbers_are_usage_errors_not_tracebacks():
    out = run(
        "invoke", f"scripted:{ROOT / 'examples/hello_script.json'}", "x", "--max-output-tokens", "0"
    )
    assert out.returncode == 2
    assert "must be greater than 0" in out.stderr and "Traceback" not in out.stderr


def test_no_arguments_lists_the_commands_and_succeeds():
    out = run()
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.startswith("usage: relay-nb")
    assert all(command in out.stdout for command in ("demo", "invoke", "conformance"))


def _shop(tmp_path: Path) -> str:
    from relay_nb.testing.seed import seed_database

    url = f"sqlite:///{tmp_path / 'shop.sqlite'}"
    seed_database(url)
    return url


def test_ask_asks_your_own_database_and_prints_the_transcript(tmp_path):
    script = tmp_path / "script.json"
    sql = "SELECT name, price FROM products ORDER BY price DESC LIMIT 3"
    script.write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "query_db", "input": {"sql": sql}}]},
                {"text": "Those three cost the most."},
            ]
        )
    )
    url = _shop(tmp_path)
    out = run("ask", url, "which products cost the most?", "--model", f"scripted:{script}")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    words = " ".join(out.stdout.split())
    assert words.startswith(f"relay-nb ask · model scripted:{script}, from --model.")
    assert "Q: which products cost the most?" in lines and "A: Those three cost the most." in lines
    assert f"    {sql}" in lines  # as the model wrote it (short: one line)
    assert lines[-1].startswith("stop after ")
    limited = run("ask", url, "which?", "--model", f"scripted:{script}", "--tables", "orders")
    assert "products is not a table you may read" in limited.stdout
    assert "table_not_allowed" not in limited.stdout  # the rule code stays on the error object


def test_ask_without_a_model_or_with_a_missing_file_says_the_fix_in_one_line(tmp_path):
    url = _shop(tmp_path)
    no_model = run("ask", url, "how many?", ANTHROPIC_API_KEY="", RELAY_MODEL="")
    assert no_model.returncode == 2 and no_model.stdout == ""
    assert no_model.stderr.startswith("relay-nb: no model is configured: pass --model PROFILE")
    assert no_model.stderr.count("\n") == 1
    missing = tmp_path / "missing.sqlite"
    gone = run("ask", f"sqlite:///{missing}", "how many?", "--model", "scripted:x.json")
    assert gone.returncode == 2 and "unable to open database file" in gone.stderr
    assert gone.stderr.count("\n") == 1 and not missing.exists()


def test_ask_never_prints_the_password_of_the_url(tmp_path):
    from urllib.parse import urlsplit

    import pytest

    url = os.environ.get("RELAY_TEST_PG_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("RELAY_TEST_PG_URL is not set under CI (scripts/services start)")
        pytest.skip("RELAY_TEST_PG_URL is not set: run scripts/services start")
    password = urlsplit(url).password
    script = tmp_path / "script.json"
    sql = "SELECT COUNT(*) AS n FROM orders"
    script.write_text(
        json.dumps([{"tool_calls": [{"name": "query_db", "input": {"sql": sql}}]}, {"text": "Ok."}])
    )
    out = run("ask", url, "how many orders?", "--model", f"scripted:{script}")
    assert out.returncode == 0, out.stderr
    assert password and password not in out.stdout + out.stderr
    assert "[REDACTED]@" in out.stdout


# -- relay-nb eval --------------------------------------------------------------------------

BANK = ROOT / "examples" / "shop_questions.yaml"
ANSWERS = ROOT / "examples" / "shop_answers.json"


def test_eval_runs_the_shipped_bank_offline_and_prints_accuracy_reasons_and_cost(tmp_path):
    data = str(tmp_path / "data")
    out = run("eval", str(BANK), "--model", f"scripted:{ANSWERS}", RELAY_DATA_DIR=data)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("shop: accuracy 66.7% (24/36)")
    assert "$" in first and "(scripted, not spent)" in first
    assert "✗ cheapest-tea: refused" in out.stdout
    assert "✗ dutch-revenue: wrong values" in out.stdout
    assert out.stderr.startswith("estimate: 36 attempt(s) of 36 question(s)")
    (saved,) = (tmp_path / "data" / "evals").glob("shop-*.json")
    assert f"saved: {saved}" in out.stdout
    # the second run compares itself with the first; below --min-accuracy it exits 1
    again = run(
        "eval",
        str(BANK),
        "--model",
        f"scripted:{ANSWERS}",
        "--min-accuracy",
        "0.8",
        RELAY_DATA_DIR=data,
    )
    assert again.returncode == 1
    assert "no question changed its verdict" in again.stdout
    assert "accuracy 66.7% is below --min-accuracy 80.0%" in again.stderr
    passing = run(
        "eval",
        str(BANK),
        "--model",
        f"scripted:{ANSWERS}",
        "--min-accuracy",
        "0.6",
        "--no-save",
        RELAY_DATA_DIR=data,
    )
    assert passing.returncode == 0
    assert len(list((tmp_path / "data" / "evals").glob("shop-*.json"))) == 2


def test_eval_json_html_and_estimate(tmp_path):
    html = tmp_path / "report.html"
    out = run(
        "eval",
        str(BANK),
        "--model",
        f"scripted:{ANSWERS}",
        "--json",
        "--html",
        str(html),
        "--no-save",
        "--repeat",
        "2",
        "--concurrency",
        "8",
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["accuracy"] == 24 / 36 and len(report["attempts"]) == 72
    assert report["repeat"] == 2 and report["estimate"]["attempts"] == 72
    assert html.read_text().startswith("<!doctype html>") and "cheapest-tea" in html.read_text()
    estimate = run("eval", str(BANK), "--model", f"scripted:{ANSWERS}", "--estimate")
    assert estimate.returncode == 0 and estimate.stdout == ""
    assert "with claude-sonnet-4-6" in estimate.stderr and "≈ $" in estimate.stderr


def test_eval_oracle_writes_answers_that_score_every_gold_query(tmp_path):
    oracle = tmp_path / "oracle.json"
    wrote = run("eval", str(BANK), "--oracle", str(oracle))
    assert wrote.returncode == 0
    assert wrote.stdout.startswith(
        "wrote the oracle's answers to 34 questions (2 give expected rows, not SQL: no answer)"
    )
    out = run("eval", str(BANK), "--model", f"scripted:{oracle}", "--no-save")
    assert "misses: error 2" in out.stdout  # the two questions with expected rows have no SQL
    assert "shop: accuracy 94.4% (34/36)" in out.stdout


def test_eval_mistakes_are_one_line_with_the_fix(tmp_path):
    bad_bank = tmp_path / "b.yaml"
    bad_bank.write_text("questions:\n  - {question: q}\n")
    out = run("eval", str(bad_bank), "--model", f"scripted:{ANSWERS}")
    assert out.returncode == 2 and out.stderr.startswith("relay-nb: b.yaml:2: question 'q'")
    assert "Traceback" not in out.stderr
    wrong = run("eval", str(BANK), "--model", f"scripted:{ANSWERS}", "--connect", "shop")
    assert wrong.returncode == 2 and "--connect takes ID=URL" in wrong.stderr
    low = run("eval", str(BANK), "--model", f"scripted:{ANSWERS}", "--min-accuracy", "80")
    assert low.returncode == 2 and "between 0 and 1" in low.stderr
    missing = run(
        "eval",
        str(BANK),
        "--model",
        f"scripted:{ANSWERS}",
        "--connect",
        f"shop=sqlite:///{tmp_path / 'none.db'}",
    )
    assert missing.returncode == 2 and "none.db" in missing.stderr


def test_demo_examples_writes_the_shipped_bank_once_and_keeps_what_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The files the docs' eval command names, out of the package (a wheel has no clone)."""
    from relay_nb.cli import main

    target = tmp_path / "ex"
    assert main(["demo", "--examples", str(target)]) == 0
    first = capsys.readouterr().out
    assert (
        first.count("wrote ") == 4 and f"Next: relay-nb eval {target}/shop_questions.yaml" in first
    )
    assert (target / "shop_questions.yaml").read_bytes() == (ROOT / BANK).read_bytes()
    assert (target / "shop_expected" / "categories.csv").exists()
    (target / "shop_answers.json").write_text("[]")  # the analyst's own edit is kept
    assert main(["demo", "--examples", str(target)]) == 0
    assert capsys.readouterr().out.count("kept ") == 4
    assert (target / "shop_answers.json").read_text() == "[]"
    (tmp_path / "a_file").write_text("x")
    assert main(["demo", "--examples", str(tmp_path / "a_file")]) == 2
    assert "is a file; name a directory" in capsys.readouterr().err


def test_ask_shows_its_steps_saves_the_table_and_fails_when_no_query_ran(tmp_path):
    """The terminal as an analyst uses it (issue 37, item 10): a line per step while the turn
    runs, --out FILE, and a non-zero exit when the answer rests on no data."""
    url = _shop(tmp_path)
    sql = "SELECT name, price FROM products ORDER BY price DESC LIMIT 3"
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [{"tool_calls": [{"name": "query_db", "input": {"sql": sql}}]}, {"text": "Three."}]
        )
    )
    saved = tmp_path / "top.csv"
    done = run("ask", url, "top 3?", "--model", f"scripted:{script}", "--out", str(saved))
    assert done.returncode == 0, done.stderr
    assert "… running query_db" in done.stderr and "  query_db: 3 rows" in done.stderr
    assert f"saved 3 rows to {saved}" in done.stdout
    assert saved.read_text().splitlines()[0] == "name,price"
    as_json = tmp_path / "top.json"
    run("ask", url, "top 3?", "--model", f"scripted:{script}", "--out", str(as_json))
    records = json.loads(as_json.read_text())
    assert len(records) == 3 and set(records[0]) == {"name", "price"}
    wrong = run("ask", url, "top 3?", "--model", f"scripted:{script}", "--out", "top.xlsx")
    assert wrong.returncode == 2 and "end it in .csv, .parquet or .json" in wrong.stderr
    assert wrong.stdout == ""  # refused before connecting or asking
    # a script written for another connector name: the tool does not exist here
    other = tmp_path / "other.json"
    other.write_text(
        json.dumps(
            [{"tool_calls": [{"name": "query_chinook", "input": {"sql": sql}}]}, {"text": "Hm."}]
        )
    )
    failed = run("ask", url, "top 3?", "--model", f"scripted:{other}")
    assert failed.returncode == 1
    assert "query_chinook is not a tool here; this target's tools are query_db" in failed.stderr


def test_ctrl_c_during_a_query_says_what_was_running_and_exits_130(tmp_path):
    import signal
    import time

    url = _shop(tmp_path)
    slow = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000000) "
        "SELECT COUNT(*) AS n FROM c"
    )
    script = tmp_path / "slow.json"
    script.write_text(
        json.dumps([{"tool_calls": [{"name": "query_db", "input": {"sql": slow}}]}, {"text": "x"}])
    )
    command = [str(Path(sys.executable).with_name("relay-nb")), "ask", url, "count", "--model"]
    env = {**os.environ, "RELAY_MODEL_REQUESTS": "none"}
    process = subprocess.Popen(
        [*command, f"scripted:{script}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    seen = ""
    deadline = time.monotonic() + 60
    while "… running query_db" not in seen and time.monotonic() < deadline:
        seen += process.stderr.readline()
    time.sleep(0.5)  # the query is running
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=60)
    assert process.returncode == 130, seen + rest
    assert "relay-nb: stopped while running query_db" in rest
