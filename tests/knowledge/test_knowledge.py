"""The knowledge file (issue 19, first step): validated with errors that name the line, and
reaching the prompt as context — rules and metrics always, the verified queries most like
the question, the glossary's words the question uses."""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
from pathlib import Path

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.context.knowledge_source import KnowledgeSource
from relay_nb.context.types import ContextRequest
from relay_nb.errors import ConfigurationError
from relay_nb.knowledge import Knowledge, VerifiedQuery, load_knowledge, parse_knowledge
from relay_nb.testing.seed import seed_database

SHOP = """\
description: A coffee shop's customers and orders.
tables:
  orders:
    description: One row per order, whatever its status.
    synonyms: [purchases]
    columns:
      status:
        description: where the order ended
        values: [paid, refunded, cancelled]
  customers:
    synonyms: [clients]
    columns:
      country: {description: ISO country code, synonyms: [nation]}
metrics:
  - name: revenue
    sql: SUM(orders.total)
    filters: ["orders.status = 'paid'"]
    description: Revenue counts paid orders only.
  - name: refund rate
    sql: AVG(CASE WHEN orders.status = 'refunded' THEN 1.0 ELSE 0 END)
dimensions:
  region: customers.country
joins:
  - {left: orders, right: customers, on: orders.customer_id = customers.id}
rules:
  - Revenue counts paid orders only.
  - Never show customer e-mail addresses.
synonyms:
  turnover: [revenue]
verified_queries:
  - question: What was our revenue by month last year?
    sql: |
      SELECT strftime('%Y-%m', ordered_at) AS month, SUM(total) AS revenue
      FROM orders WHERE status = 'paid' GROUP BY month ORDER BY month
    verified_by: ana@example.com
    verified_at: 2026-11-30
  - question: How many customers per country?
    sql: SELECT country, COUNT(*) AS n FROM customers GROUP BY country
"""


def _items(knowledge: Knowledge, question: str, connectors=("shop",)):
    source = KnowledgeSource(knowledge, "shop")
    request = ContextRequest(question=question, connector_ids=tuple(connectors))
    return asyncio.run(source.fetch(request))


def test_a_file_is_validated_and_read(tmp_path: Path) -> None:
    path = tmp_path / "relay.knowledge.yaml"
    path.write_text(SHOP, encoding="utf-8")
    knowledge = load_knowledge(path)
    assert knowledge.tables["orders"].columns["status"].values == ("paid", "refunded", "cancelled")
    assert knowledge.metrics[0].filters == ("orders.status = 'paid'",)
    assert knowledge.verified_queries[0].verified_at == dt.date(2026, 11, 30)
    assert (
        load_knowledge({"rules": ["x"]}).rules == ("x",) and load_knowledge(knowledge) is knowledge
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules:\n  - ok\nmetrcs:\n  - name: x\n", r"knowledge line 3: metrcs: unknown key"),
        (
            "tables:\n  orders:\n    columns:\n      status:\n        valus: [a]\n",
            r"line 5: tables\.orders\.columns\.status\.valus: unknown key",
        ),
        ("metrics:\n  - name: revenue\n  - name: margin\n    sql: x\n", r"line 2: metrics\.0\.sql"),
        (
            "metrics:\n  - {name: a, sql: x}\n  - {name: A, sql: y}\n",
            r"line 1: metrics: .*metric 'A' is defined twice",
        ),
        ("rules: [unclosed\n", r"knowledge line 2: "),
        ("- just\n- a list\n", r"a knowledge file is a mapping"),
        ("verified_queries:\n  - question: q\n    sql: s\n    verified_at: soon\n", r"line 4:"),
    ],
)
def test_mistakes_name_their_line(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_knowledge(text)


def test_any_sequence_of_sources_is_merged() -> None:
    # the signature takes a Sequence; one that is not a list or tuple used to reach Path()
    # and fail with a TypeError
    first, second = {"rules": ["first"]}, {"rules": ["second"]}
    as_list = load_knowledge([first, second])
    assert load_knowledge(collections.deque([first, second])) == as_list
    assert as_list.rules == ("first", "second")


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        load_knowledge(tmp_path / "nope.yaml")


def test_rules_metrics_and_the_questions_words_reach_the_context() -> None:
    knowledge = parse_knowledge(SHOP)
    main, *verified = _items(knowledge, "What was the turnover per nation of our clients?")
    text = main.content
    assert main.priority == 72 and main.kind == "knowledge" and main.connector_id == "shop"
    assert "- Revenue counts paid orders only." in text
    assert "revenue = SUM(orders.total) WHERE orders.status = 'paid'" in text
    assert "Dimensions: region = customers.country" in text
    assert "orders ⋈ customers ON orders.customer_id = customers.id" in text
    # the glossary entries for the words the question uses, and the tables it names
    assert "turnover → revenue" in text and "nation → column customers.country" in text
    assert "clients → table customers" in text
    assert '- customers (columns: country — "ISO country code")' in text
    assert "- orders" not in text  # not named by the question
    assert verified == []  # no verified question shares a word with this one


def test_the_most_similar_verified_queries_are_retrieved_not_all() -> None:
    knowledge = parse_knowledge(SHOP)
    _main, first, *rest = _items(knowledge, "revenue by month in 2025?")
    assert "revenue by month last year" in first.content and first.priority == 68
    assert "by ana@example.com on 2026-11-30" in first.content
    assert "status = 'paid' GROUP BY month" in first.content
    assert all("revenue by month" not in item.content for item in rest)
    (main,) = _items(knowledge, "weather in paris")  # nothing alike: no verified query
    assert main.source == "knowledge:shop"
    assert _items(knowledge, "revenue by month", connectors=("other",)) == []


def test_a_verified_query_replaces_one_with_the_same_question() -> None:
    knowledge = parse_knowledge(SHOP)
    again = knowledge.with_verified(
        VerifiedQuery(question="how many customers PER country?", sql="SELECT 1")
    )
    assert len(again.verified_queries) == 2 and again.verified_queries[-1].sql == "SELECT 1"


def test_relay_knowledge_reaches_the_models_prompt(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shop.sqlite'}"
    seed_database(url)
    path = tmp_path / "relay.knowledge.yaml"
    path.write_text(SHOP, encoding="utf-8")
    model = ScriptedRuntime([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    relay = Relay(model, ledger=False)
    try:
        with pytest.raises(ConfigurationError, match="no connector 'shop'; connect it first"):
            relay.knowledge("shop", path)
        relay.connect("shop", url)
        relay.knowledge("shop", path)
        relay.ask("What was our revenue by month in 2025?")
        prompt = model.requests[-1].messages[0].text()
        assert "Revenue counts paid orders only." in prompt
        assert "FROM orders WHERE status = 'paid' GROUP BY month" in prompt
        relay.connect("shop", url)  # a re-run connect cell keeps what the team knows
        relay.ask("revenue by month?")
        assert "Revenue counts paid orders only." in model.requests[-1].messages[0].text()
        relay.disconnect("shop")
        assert not relay.has_source("knowledge:shop")
    finally:
        relay.close()


def test_yaml_words_that_version_1_1_reads_as_booleans_stay_words() -> None:
    knowledge = parse_knowledge(
        "joins:\n  - {left: a, right: b, on: a.id = b.a_id}\n"
        "tables:\n  t:\n    columns:\n      flag: {values: [yes, no, on, off]}\n"
    )
    assert knowledge.joins[0].on == "a.id = b.a_id"
    assert knowledge.tables["t"].columns["flag"].values == ("yes", "no", "on", "off")


# -- saving verified queries -------------------------------------------------------------------

COMMENTED = """\
# the shop's knowledge: reviewed in git
rules:
  - Revenue counts paid orders only.  # finance, 2026-10
verified_queries:
  - question: How many customers per country?
    sql: SELECT country, COUNT(*) AS n FROM customers GROUP BY country
metrics:
  - {name: revenue, sql: SUM(orders.total)}
"""


def test_a_verified_query_is_inserted_and_every_written_line_kept(tmp_path: Path) -> None:
    from relay_nb.knowledge.save import append_verified

    path = tmp_path / "shop.knowledge.yaml"
    path.write_text(COMMENTED, encoding="utf-8")
    query = VerifiedQuery(
        question="Top 5 products?",
        sql="SELECT name\nFROM products\nORDER BY price DESC\nLIMIT 5",
        verified_by="ana",
        verified_at=dt.date(2026, 12, 2),
    )
    saved = append_verified(path, query)
    text = path.read_text(encoding="utf-8")
    for line in COMMENTED.splitlines():
        assert line in text  # comments, order and spelling as the team wrote them
    assert text.index("Top 5 products?") < text.index("metrics:")  # inside its list
    assert saved.verified_queries[-1] == query and load_knowledge(path) == saved
    # verified again, the same SQL laid out otherwise (a re-run cell): nothing to do
    again = query.model_copy(update={"question": "top 5 PRODUCTS?", "sql": query.sql + ";\n"})
    assert append_verified(path, again) == saved
    assert path.read_text(encoding="utf-8") == text
    with pytest.raises(ConfigurationError, match="already has a different verified query"):
        append_verified(path, query.model_copy(update={"sql": "SELECT 1"}))
    assert path.read_text(encoding="utf-8") == text  # a refused save changes nothing


@pytest.mark.parametrize(
    "start",
    [
        "",
        "rules: [a]",
        "rules: [a]\nverified_queries:\n",
        "verified_queries:\n  - question: q\n    sql: s",
    ],
)
def test_a_verified_query_can_be_added_to_any_file(tmp_path: Path, start: str) -> None:
    from relay_nb.knowledge.save import append_verified

    path = tmp_path / "k.yaml"
    if start:
        path.write_text(start, encoding="utf-8")
    saved = append_verified(path, VerifiedQuery(question="new one?", sql="SELECT 1"))
    assert saved.verified_queries[-1].question == "new one?"
    assert load_knowledge(path) == saved


def test_an_inline_list_is_not_rewritten(tmp_path: Path) -> None:
    from relay_nb.knowledge.save import append_verified

    path = tmp_path / "k.yaml"
    path.write_text("verified_queries: [{question: q, sql: s}]\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="written inline"):
        append_verified(path, VerifiedQuery(question="x", sql="SELECT 1"))


def test_verify_saves_the_last_turn_and_the_next_question_uses_it(
    tmp_path: Path, monkeypatch
) -> None:
    from relay_nb.facade import default as facade
    from relay_nb.testing.shell import TestingShell

    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'shop.sqlite'}"
    seed_database(url)
    sql = "SELECT country, COUNT(*) AS n FROM customers GROUP BY country ORDER BY n DESC"
    model = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "query_shop", "input": {"sql": "SELECT nope FROM x"}}]},
            {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]},
            {"text": "Most customers are in NL."},
            {"text": "again"},
            # the same query written differently: spacing, case, a comment
            {"tool_calls": [{"name": "query_shop", "input": {"sql": "-- top\n" + sql.lower()}}]},
            {"text": "NL again"},
            {
                "tool_calls": [
                    {"name": "query_shop", "input": {"sql": "SELECT COUNT(*) FROM orders"}}
                ]
            },
            {"text": "other"},
        ]
    )
    relay = Relay(model, ledger=False)
    relay.connect("shop", url)
    facade._default = relay
    shell = TestingShell()
    try:
        with pytest.raises(Exception, match="nothing to verify"):
            shell.run("%relay --verify")
        shell.run("%relay which country has the most customers?")
        out = shell.run("%relay --verify").stdout
        path = tmp_path / "shop.knowledge.yaml"  # none was attached: one is made for shop
        assert out.startswith(f"{path.name}: 'which country has the most customers?' and its SQL")
        (query,) = load_knowledge(path).verified_queries
        assert query.sql == sql and query.verified_at == dt.date.today()  # the model's SQL
        relay.ask("which country has most customers")
        assert sql in model.requests[-1].messages[0].text()  # retrieved for a close question
        followed = relay.ask("top countries by customers?")
        (note,) = followed.notes
        assert note.startswith("follows the verified query for 'which country has the most")
        assert f"on {dt.date.today().isoformat()})" in note
        from relay_nb.views import turn_html, turn_text

        assert f"✓ {note}" in turn_text(followed) and "relay-verified" in turn_html(followed)
        assert relay.ask("how many orders?").notes == []
    finally:
        facade._default = None
        relay.close()


def test_a_config_file_attaches_knowledge_to_its_connector(tmp_path: Path) -> None:
    import json

    url = f"sqlite:///{tmp_path / 'shop.sqlite'}"
    seed_database(url)
    (tmp_path / "knowledge").mkdir()
    (tmp_path / "knowledge" / "shop.yaml").write_text(SHOP, encoding="utf-8")
    entry = {"type": "sqlite", "id": "shop", "config": {"url": url}}
    config = tmp_path / "relay.config.json"
    config.write_text(json.dumps({"connectors": [{**entry, "knowledge": "knowledge/shop.yaml"}]}))
    model = ScriptedRuntime([{"text": "ok"}])
    relay = Relay(model, ledger=False, config=config)  # relative to the config file
    try:
        relay.ask("revenue by month?")
        assert "Revenue counts paid orders only." in model.requests[-1].messages[0].text()
    finally:
        relay.close()
    (tmp_path / "bad.yaml").write_text("rules: [a]\nmetrcs: []\n", encoding="utf-8")
    config.write_text(json.dumps({"connectors": [{**entry, "knowledge": "bad.yaml"}]}))
    relay = Relay(ScriptedRuntime([]), ledger=False)
    try:
        with pytest.raises(ConfigurationError, match=r"'shop', knowledge: bad.yaml line 2: metrcs"):
            relay.load_config(config)
        assert relay.connectors == {}  # all or nothing
    finally:
        relay.close()


def test_same_query_sets_aside_spelling_but_not_meaning() -> None:
    from relay_nb.context.sql_match import same_query, same_shape

    base = "SELECT country, COUNT(*) AS n FROM customers WHERE active = 1 GROUP BY country"
    assert same_query(base, base.lower().replace(" ", "  "), "sqlite")
    top = f"{base} ORDER BY n DESC LIMIT 10"
    assert not same_query(top, top.replace("10", "5"), "sqlite")  # top 5 is not top 10
    assert same_shape(top, top.replace("10", "5"), "sqlite")  # but closely follows it
    assert same_query(base, f"-- checked\n{base}", "postgres")
    assert not same_query(base, base.replace("active = 1", "active = 0"), "sqlite")
    assert not same_query(base, "not sql ((", "sqlite")


def test_same_shape_sets_aside_values_but_not_structure() -> None:
    from relay_nb.context.sql_match import same_shape

    base = "SELECT country, COUNT(*) AS n FROM customers WHERE signed_up >= '2025-01-01' GROUP BY 1"
    assert same_shape(base, base.replace("2025-01-01", "2024-06-01"), "sqlite")
    assert not same_shape(base, base.replace("country", "city"), "sqlite")
    assert not same_shape(base, base.replace(">=", "<"), "sqlite")


@pytest.mark.parametrize(
    ("sql", "used"),
    [
        ("SELECT SUM(total) FROM orders WHERE status = 'paid'", True),
        ("SELECT SUM(o.total) AS r FROM orders AS o WHERE o.status = 'paid' AND o.id > 3", True),
        ("SELECT SUM(total) FROM orders", False),  # the filter is missing: not the metric
        ("SELECT AVG(total) FROM orders WHERE status = 'paid'", False),
        (
            "SELECT month, SUM(orders.total) FROM orders WHERE orders.status = 'paid' GROUP BY 1",
            True,
        ),
        # the filter holds in a subquery, not where the sum is taken: not the metric
        (
            "SELECT SUM(total) FROM orders WHERE customer_id IN "
            "(SELECT id FROM customers WHERE status = 'paid')",
            False,
        ),
    ],
)
def test_a_metric_is_used_only_with_its_expression_and_every_filter(sql: str, used: bool) -> None:
    from relay_nb.context.sql_match import metric_used

    assert metric_used(sql, "SUM(orders.total)", ("orders.status = 'paid'",), "sqlite") is used


def test_the_trace_names_a_close_verified_query_and_a_metric_used(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shop.sqlite'}"
    seed_database(url)
    verified = "SELECT country, COUNT(*) AS n FROM customers WHERE country <> 'NL' GROUP BY country"
    revenue = "SELECT SUM(total) AS revenue FROM orders WHERE status = 'paid'"
    other_country = verified.replace("NL", "DE")
    model = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "query_shop", "input": {"sql": revenue}}]},
            {"text": "Revenue was …"},
            {"tool_calls": [{"name": "query_shop", "input": {"sql": other_country}}]},
            {"text": "Per country …"},
        ]
    )
    relay = Relay(model, ledger=False)
    try:
        relay.connect("shop", url)
        own = parse_knowledge(SHOP).with_verified(
            VerifiedQuery(question="Customers per country but one", sql=verified, verified_by="bo")
        )
        relay.knowledge("shop", own)
        turn = relay.ask("What was our revenue?")
        assert turn.notes == ["uses the metric 'revenue' — Revenue counts paid orders only."]
        turn = relay.ask("Customers per country, without Germany?")
        (note,) = turn.notes
        assert note == (
            "closely follows the verified query for 'Customers per country but one' "
            "(verified by bo): the same query with other values"
        )
    finally:
        relay.close()


def test_a_description_is_one_bounded_quoted_line() -> None:
    from relay_nb.context.knowledge_source import MAX_DESCRIPTION, quoted

    assert quoted('Paid "orders"\n\nonly') == '"Paid \\"orders\\" only"'
    long = quoted("word " * 10_000)
    assert len(long) <= MAX_DESCRIPTION + 2 and long.endswith('…"')
