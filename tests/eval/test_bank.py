# ruff: noqa: E501 - the problem cases are data
"""Question banks: the three formats, defaults, and every problem reported with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay_nb.errors import ConfigurationError
from relay_nb.eval import load_bank

SHIPPED = Path(__file__).parents[2] / "examples" / "shop_questions.yaml"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_shop_bank_covers_the_kinds_of_question_analysts_ask() -> None:
    bank = load_bank(SHIPPED)
    assert bank.name == "shop" and bank.connectors == {"shop": "demo"}
    assert len(bank.questions) >= 30
    kinds = {"filter", "aggregate", "time-window", "top-n", "join-3", "ratio", "ambiguous"}
    assert kinds <= set(bank.tags())
    assert {q.expected_kind() for q in bank.questions} == {"sql", "rows", "csv"}
    assert all(q.connector == "shop" for q in bank.questions)
    assert bank.resolve_csv(next(q for q in bank.questions if q.csv)).is_file()


def test_yaml_defaults_apply_to_every_question_and_a_question_overrides_them(tmp_path) -> None:
    bank = load_bank(
        write(
            tmp_path,
            "b.yaml",
            "connector: db\ndefaults: {rel_tol: 0.01, tags: [x]}\nquestions:\n"
            "  - {question: 'How many?', sql: SELECT 1}\n"
            "  - {id: two, question: 'Which?', rows: [[1]], tags: 'a, b', rel_tol: 0}\n",
        )
    )
    first, second = bank.questions
    assert (first.id, first.connector, first.rel_tol, first.tags) == (
        "How many?",
        "db",
        0.01,
        ("x",),
    )
    assert (second.id, second.rel_tol, second.tags, second.line) == ("two", 0.0, ("a", "b"), 5)
    assert bank.name == "b"


def test_rows_given_as_mappings_keep_their_first_rows_key_order(tmp_path) -> None:
    bank = load_bank(
        write(
            tmp_path,
            "b.yaml",
            "questions:\n  - question: q\n    connector: db\n"
            "    rows: [{name: Ada, n: 2}, {n: 1, name: Bo}]\n",
        )
    )
    assert bank.questions[0].rows == [["Ada", 2], ["Bo", 1]]


def test_jsonl_and_csv_banks(tmp_path) -> None:
    jsonl = write(
        tmp_path,
        "b.jsonl",
        '{"id": "a", "question": "How many?", "connector": "db", "sql": "SELECT 1"}\n\n'
        '{"id": "b", "question": "Which?", "connector": "db", "rows": [[1]]}\n',
    )
    assert [q.line for q in load_bank(jsonl).questions] == [1, 3]
    csv = write(
        tmp_path,
        "b.csv",
        "id,question,connector,sql,tags,order_matters\n"
        'a,How many?,db,SELECT 1,"filter, aggregate",true\n'
        "b,Which?,db,SELECT 2,,\n",
    )
    first, second = load_bank(csv).questions
    assert (first.tags, first.order_matters, first.line) == (("filter", "aggregate"), True, 2)
    assert (second.tags, second.order_matters, second.line) == ((), None, 3)


PROBLEMS = [
    # (file name, text, the line every problem is reported on, a phrase of the fix)
    (
        "b.yaml",
        "questions:\n  - question: q\n    connector: db\n",
        "b.yaml:2",
        "give the expected result",
    ),
    (
        "b.yaml",
        "questions:\n  - question: q\n    connector: db\n    sql: S\n    rows: [[1]]\n",
        "b.yaml:2",
        "give one expected result, not sql and rows",
    ),
    ("b.yaml", "questions:\n  - question: q\n    sql: S\n", "b.yaml:2", "connector is missing"),
    (
        "b.yaml",
        "connector: db\nquestions:\n  - {question: q, sql: S, tag: [x]}\n",
        "b.yaml:3",
        "unknown key 'tag'",
    ),
    (
        "b.yaml",
        "connector: db\nquestions:\n  - {id: a, question: q, sql: S}\n  - {id: a, question: r, sql: S}\n",
        "b.yaml:4",
        "used at line 3 too",
    ),
    (
        "b.yaml",
        "connectors: {shop: demo}\nquestions:\n  - {question: q, sql: S, connector: crm}\n",
        "b.yaml:3",
        "not among the bank's connectors",
    ),
    (
        "b.yaml",
        "connector: db\nquestions:\n  - {question: q, sql: S, rel_tol: -1}\n",
        "b.yaml:3",
        "rel_tol",
    ),
    (
        "b.yaml",
        "connector: db\nquestions:\n  - {question: '', sql: S}\n",
        "b.yaml:3",
        "question is missing",
    ),
    (
        "b.yaml",
        "connector: db\nquestions:\n  - {question: q, sql: S, column_policy: loose}\n",
        "b.yaml:3",
        "column_policy",
    ),
    ("b.yaml", "questions: [\n  {question: q\n", "b.yaml:3", ""),
    ("b.yaml", "connector: db\nquestion:\n  - {question: q, sql: S}\n", "b.yaml:1", "questions"),
    (
        "b.jsonl",
        '{"question": "q", "connector": "db", "sql": "S"}\n{"question": \n',
        "b.jsonl:2",
        "not valid JSON",
    ),
    ("b.csv", "question,connector,sql\nq,db,S,extra\n", "b.csv:2", "more cells than the header"),
    ("b.csv", "id,connector,sql\na,db,S\n", "b.csv:1", "needs a question column"),
    ("b.txt", "question: q\n", "question bank 'b.txt'", "use a .yaml, .json, .jsonl or .csv file"),
]


@pytest.mark.parametrize(("name", "text", "where", "fix"), PROBLEMS)
def test_each_problem_names_its_file_line_and_fix(tmp_path, name, text, where, fix) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_bank(write(tmp_path, name, text))
    message = str(caught.value)
    assert message.startswith(where), message
    assert fix in message


def test_every_problem_of_a_bank_is_reported_at_once(tmp_path) -> None:
    text = "connector: db\nquestions:\n" + "".join(f"  - {{question: q{i}}}\n" for i in range(15))
    with pytest.raises(ConfigurationError) as caught:
        load_bank(write(tmp_path, "b.yaml", text))
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("b.yaml:3: question 'q0'")
    assert lines[-1] == "… and 3 more"


def test_connector_targets_read_variables_when_connecting(tmp_path, monkeypatch) -> None:
    """A bank loads without the variables its connectors name (Python and %relay connect
    their own); the CLI reads them when it connects — only those the analyst allows (issue
    38, item 3: a bank's URL could carry a token to a host of its choosing) — and says the
    fix when one is unset or not allowed."""
    path = write(
        tmp_path,
        "b.yaml",
        "connectors: {db: '${SHOP_URL}', local: sqlite:///data/shop.sqlite}\n"
        "questions:\n  - {question: q, sql: S, connector: db}\n",
    )
    monkeypatch.delenv("SHOP_URL", raising=False)
    bank = load_bank(path)
    allowed = ["SHOP_URL"]
    with pytest.raises(
        ConfigurationError, match=r"reads \$\{SHOP_URL\}, which is not set.*--connect db=URL"
    ):
        bank.target("db", allowed_env=allowed)
    monkeypatch.setenv("SHOP_URL", "postgresql://ro@db/shop")
    assert bank.target("db", allowed_env=allowed) == "postgresql://ro@db/shop"
    with pytest.raises(ConfigurationError, match=r"only when you allow it .*--allow-env SHOP_URL"):
        bank.target("db")  # set, but not allowed: never read
    # a relative SQLite file is the bank's neighbour, wherever the command runs
    assert bank.target("local") == f"sqlite:///{tmp_path / 'data' / 'shop.sqlite'}"


def test_the_digest_follows_questions_and_expected_results_not_layout(tmp_path) -> None:
    one = load_bank(
        write(tmp_path, "a.yaml", "connector: db\nquestions:\n  - {question: q, sql: S}\n")
    )
    moved = load_bank(
        write(tmp_path, "b.yaml", "\n\nconnector: db\nquestions:\n\n  - {question: q, sql: S}\n")
    )
    other = load_bank(
        write(tmp_path, "c.yaml", "connector: db\nquestions:\n  - {question: q, sql: T}\n")
    )
    assert one.digest == moved.digest != other.digest


def test_a_missing_bank_file_says_so(tmp_path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        load_bank(tmp_path / "nope.yaml")


def test_spider_and_bird_files_load_as_they_are(tmp_path) -> None:
    """The public benchmarks' own files: Spider's query/db_id with its token lists and
    parsed SQL, BIRD's SQL/question_id/difficulty/evidence."""
    spider = write(
        tmp_path,
        "dev.json",
        '[\n  {\n    "db_id": "concert_singer",\n    "query": "SELECT count(*) FROM singer",\n'
        '    "query_toks": ["SELECT"], "query_toks_no_value": [], "question_toks": [],\n'
        '    "question": "How many singers do we have?",\n'
        '    "sql": {"select": [false, [[3, [0, [0, 0, false], null]]]]}\n  },\n'
        '  {"db_id": "pets_1", "query": "SELECT 1", "question": "One?", "sql": {}}\n]\n',
    )
    first, second = load_bank(spider).questions
    assert (first.connector, first.sql, first.line) == (
        "concert_singer",
        "SELECT count(*) FROM singer",
        2,
    )
    assert (second.connector, second.line) == ("pets_1", 9)
    bird = write(
        tmp_path,
        "bird.json",
        '[{"question_id": 0, "db_id": "california_schools", "question": "Highest rate?",\n'
        '  "evidence": "rate = a / b", "SQL": "SELECT 1", "difficulty": "simple"}]\n',
    )
    (question,) = load_bank(bird).questions
    assert (question.id, question.sql, question.tags, question.notes) == (
        "0",
        "SELECT 1",
        ("simple",),
        "rate = a / b",
    )


def test_a_json_bank_reports_problems_at_each_questions_line(tmp_path) -> None:
    path = write(
        tmp_path,
        "b.json",
        '{"connector": "db",\n "questions": [\n  {"question": "q", "sql": "S"},\n  {"question": "r"}\n ]}\n',
    )
    with pytest.raises(ConfigurationError, match=r"^b\.json:4: question 'r': give the expected"):
        load_bank(path)
    with pytest.raises(ConfigurationError, match=r"^b\.json:2: not valid JSON"):
        load_bank(write(tmp_path, "b.json", "[\n{,\n]"))


def test_rows_are_checked_and_read_as_written(tmp_path) -> None:
    def problem(rows: str) -> str:
        text = f"connector: db\nquestions:\n  - question: q\n    {rows}\n"
        with pytest.raises(ConfigurationError) as caught:
            load_bank(write(tmp_path, "b.yaml", text))
        return str(caught.value)

    assert "every row needs as many cells" in problem("rows: [[1, 2], [3]]")
    assert "every row needs as many cells" in problem("columns: [a, b, c]\n    rows: [[1, 2]]")
    assert "[[paid], [refunded]]" in problem("rows: [paid, refunded]")
    ordered = load_bank(
        write(
            tmp_path,
            "b.yaml",
            "connector: db\nquestions:\n  - question: q\n    columns: [a, b]\n"
            "    rows: [{b: 2, a: 1}]\n",
        )
    )
    assert ordered.questions[0].rows == [[1, 2]]


def test_a_question_reports_every_unknown_key_with_what_was_meant(tmp_path) -> None:
    text = (
        "name: b\nconectors: {}\nconnector: db\nquestions:\n"
        "  - {questoin: q, sq: S, order_maters: true}\n"
    )
    with pytest.raises(ConfigurationError) as caught:
        load_bank(write(tmp_path, "b.yaml", text))
    message = str(caught.value)
    assert "b.yaml:2: unknown key 'conectors' (did you mean 'connectors'?)" in message
    assert "unknown key 'questoin' (did you mean 'question'?)" in message
    assert "unknown key 'order_maters' (did you mean 'order_matters'?)" in message
    assert "unknown key 'sq' (did you mean 'sql'?)" in message
    assert message.count("b.yaml:5:") == 5  # three keys, no question, no result: all at once


def test_a_missing_csv_of_expected_rows_is_a_bank_problem(tmp_path) -> None:
    text = "connector: db\nquestions:\n  - {question: q, csv: expected/nope.csv}\n"
    with pytest.raises(ConfigurationError, match=r"b\.yaml:3: .*csv 'expected/nope.csv' does not"):
        load_bank(write(tmp_path, "b.yaml", text))


def test_the_digest_follows_the_content_of_a_csv_of_expected_rows(tmp_path) -> None:
    (tmp_path / "e.csv").write_text("n\n1\n")
    path = write(tmp_path, "b.yaml", "connector: db\nquestions:\n  - {question: q, csv: e.csv}\n")
    before = load_bank(path).digest
    (tmp_path / "e.csv").write_text("n\n2\n")
    assert load_bank(path).digest != before


def test_one_text_asked_of_several_databases_gets_an_id_each(tmp_path) -> None:
    """Spider asks the same question of different databases: without ids they stay apart."""
    path = write(
        tmp_path,
        "dev.json",
        '[{"db_id": "a", "query": "SELECT 1", "question": "How many?"},\n'
        ' {"db_id": "b", "query": "SELECT 2", "question": "How many?"},\n'
        ' {"db_id": "a", "query": "SELECT 3", "question": "Which?"}]\n',
    )
    ids = [q.id for q in load_bank(path).questions]
    assert ids == ["How many? @a #1", "How many? @b #2", "Which?"]


def test_expected_rows_stay_in_the_banks_folder(tmp_path) -> None:
    """Issue 38, item 3: a bank names its CSV of expected rows beside it. ``../``, an
    absolute path, ``~`` and a link that leads out are refused when the bank loads — the
    file's contents would otherwise reach the report, its HTML and the saved JSON."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.csv"
    secret.write_text("token\nsk-live-abc123\n")
    bank_dir = tmp_path / "bank"
    bank_dir.mkdir()
    (bank_dir / "link.csv").symlink_to(secret)
    (bank_dir / "ok.csv").write_text("n\n1\n")
    # harmful as a plain path join would read it
    assert "sk-live" in (bank_dir / "../outside/secret.csv").read_text()
    for name in ("../outside/secret.csv", str(secret), "link.csv", "~/secret.csv"):
        path = write(
            bank_dir, "b.yaml", f"connector: db\nquestions:\n  - {{question: q, csv: '{name}'}}\n"
        )
        with pytest.raises(ConfigurationError, match="outside the bank's folder") as raised:
            load_bank(path)
        assert "sk-live" not in str(raised.value)
    path = write(bank_dir, "b.yaml", "connector: db\nquestions:\n  - {question: q, csv: ok.csv}\n")
    bank = load_bank(path)
    assert bank.resolve_csv(bank.questions[0]) == (bank_dir / "ok.csv").resolve()
