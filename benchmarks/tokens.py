"""Tokens per turn: what relay_nb sends the model vs a LangChain-style prompt, same schema.

For each of ten questions on one database, the first request of the turn is compared:

- relay_nb: the real request, built by a ``Session`` with a ``SQLConnector`` (the context
  resolver, the system prompt, the schema rendering, the tool declarations) and captured by a
  ``ScriptedRuntime`` that answers at once. ``ask_many`` keeps the questions independent (no
  history). Counted with relay_nb's own ``estimate_request_tokens``: chars/4 over the
  request's JSON (messages + tool declarations), so JSON quoting and escaped newlines count
  too — more than the model reads.
- LangChain-style: reproduced here, not imported (langchain is no dependency of relay_nb).
  ``SQLDatabase.get_table_info()`` with its default ``sample_rows_in_table_info=3``: for each
  table the ``CREATE TABLE`` that SQLAlchemy's ``CreateTable`` compiles from the reflected
  table (columns of ``NullType`` dropped, as LangChain does), then a ``/* 3 rows from T
  table: */`` block (column names and three rows, tab-separated, each value ``str()[:100]``),
  tables sorted and joined by blank lines. Around it, the SQL agent's instruction prefix
  (``create_sql_agent``'s ``SQL_PREFIX``, dialect and ``top_k=10`` filled in), then
  "Only use the following tables:", the table info and "Question: ...". The prefix prose is
  paraphrased to the same length (not copied), so its count is right and its wording ours.
  Views are included (``view_support=True``) so both sides describe the same relations. The
  LangChain side gets no tool declarations (its agent would add four) and no JSON framing:
  every choice leans its way.

The same tokenizer counts both sides: chars/4 (``relay_nb.runtime.types.estimate_tokens``,
what relay_nb itself uses without a provider count; no real tokenizer is available offline).
As a check that the ratio is not an artefact of chars/4 (DDL is denser in characters per
token than a compact schema line, or less), both sides are also counted in lexical pieces
(``\\w+`` runs and single punctuation marks), a tokenizer-free measure.

Two databases: the seeded ``shop`` (6 relations; the tests' database) and a 100-table x 12-
column warehouse with five rows per table, where the schema rather than the fixed
instructions dominates. Target: relay_nb <= 1/3 of the LangChain-style prompt.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import statistics
import tempfile
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.pool import NullPool
from sqlalchemy.schema import CreateTable
from sqlalchemy.types import NullType

from relay_nb.agent.session import Session
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import InvocationRequest, estimate_request_tokens, estimate_tokens
from relay_nb.testing.seed import ALLOWED_TABLES, seed_database

TARGET = 1 / 3
SAMPLE_ROWS = 3
TOP_K = 10
WIDE_TABLES = 100
WIDE_ROWS = 5

SHOP_QUESTIONS = (
    "top 5 customers by revenue",
    "how many orders were placed per month in 2024?",
    "which product category sells the most units?",
    "average order total by customer country",
    "customers who signed up but never ordered",
    "the 10 most expensive products",
    "share of orders by status",
    "revenue per product category over the last quarter",
    "how many events did each user trigger?",
    "which customers have more than 3 orders?",
)
WIDE_QUESTIONS = (
    "total sales order amount per region",
    "how many open support tickets are there per status?",
    "top 10 billing invoices by amount this year",
    "which marketing campaigns have the most contacts?",
    "average logistics shipment quantity per month",
    "finance payments by status for inactive accounts",
    "the 5 newest crm accounts",
    "inventory items with quantity below 10",
    "hr contacts created per region",
    "web events per day over the last week",
)

# The SQL agent's instruction prefix, paraphrased at the length of LangChain's SQL_PREFIX
# (1,020 characters with the dialect and top_k filled in; this one 1,026).
_AGENT_PREFIX = "\n".join(
    (
        "You are an agent that has been built to work with a SQL database.",
        "For an input question, write a syntactically valid {dialect} query to run, then "
        "read the results of that query and give back the answer.",
        "Unless the user asks for one particular number of examples, always limit the "
        "query to at most {top_k} results.",
        "You may order the results by a relevant column so that the most interesting "
        "examples in the database come back.",
        "Never select all of the columns of a given table; ask only for the columns that "
        "are relevant to the question.",
        "You have tools at hand for working with the database.",
        "Use only the tools listed below. Build your final answer only from the "
        "information that the tools below return.",
        "You MUST check your query twice before you execute it. If running a query gives "
        "you an error, rewrite the query and try again.",
        "",
        "DO NOT issue any DML statements (INSERT, UPDATE, DELETE, DROP and the like) "
        "against the database.",
        "",
        'If the question does not seem to be related to the database, simply answer "I '
        "don't know\" as the answer.",
        "",
    )
)
_TABLES_HEADER = "Only use the following tables:"
_PIECES = re.compile(r"\w+|[^\w\s]")


# -- the LangChain-style prompt ----------------------------------------------------------------


def langchain_table_info(engine: sa.Engine, tables: list[str]) -> str:
    """``SQLDatabase.get_table_info()`` for ``tables``, reproduced (see the module docstring)."""
    metadata = sa.MetaData()
    metadata.reflect(bind=engine, views=True, only=tables)
    infos = []
    with engine.connect() as conn:
        for table in metadata.sorted_tables:
            for column in [c for c in table.columns if isinstance(c.type, NullType)]:
                table._columns.remove(column)  # what LangChain does to untyped columns
            create = str(CreateTable(table).compile(engine)).rstrip()
            names = "\t".join(column.name for column in table.columns)
            rows = conn.execute(sa.select(table).limit(SAMPLE_ROWS))
            sample = "\n".join("\t".join(str(value)[:100] for value in row) for row in rows)
            infos.append(
                f"{create}\n\n/*\n{SAMPLE_ROWS} rows from {table.name} table:\n"
                f"{names}\n{sample}\n*/"
            )
    infos.sort()
    return "\n\n".join(infos)


def langchain_prompt(dialect: str, table_info: str, question: str) -> str:
    prefix = _AGENT_PREFIX.format(dialect=dialect, top_k=TOP_K)
    return f"{prefix}\n{_TABLES_HEADER}\n{table_info}\n\nQuestion: {question}"


# -- relay_nb's requests -----------------------------------------------------------------------


async def _relay_requests(url: str, tables: list[str], questions: tuple[str, ...]) -> list:
    runtime = ScriptedRuntime()
    for _ in questions:
        runtime.add({"text": "ok"})
    session = Session(runtime, connectors=[SQLConnector("shop", url, tables=tables)])
    try:
        turns = await session.ask_many(list(questions), concurrency=1)
    finally:
        await session.aclose()
    if any(turn.finish_reason != "stop" for turn in turns):
        raise RuntimeError("a scripted turn did not finish")
    return list(runtime.requests)


def _request_text(request: InvocationRequest) -> str:
    """What the model reads: message texts and the tool declarations (compact JSON)."""
    texts = [
        part.text
        for message in request.messages
        for part in message.parts()
        if hasattr(part, "text")
    ]
    tools = [
        json.dumps(
            {"name": t.name, "description": t.description, "input_schema": t.input_schema},
            separators=(",", ":"),
        )
        for t in request.tools
    ]
    return "\n".join(texts + tools)


def _fixed_tokens(request: InvocationRequest) -> int:
    """The part of a relay_nb request that does not grow with the schema: the system rules
    (without the connector block) and the tool declarations."""
    system = request.messages[0].content if request.messages else ""
    rules = system.split("# Connectors", 1)[0] if isinstance(system, str) else ""
    tools = [
        json.dumps({"name": t.name, "description": t.description, "input_schema": t.input_schema})
        for t in request.tools
    ]
    return estimate_tokens(rules + "".join(tools))


# -- databases ---------------------------------------------------------------------------------

_DOMAINS = ("sales", "inventory", "hr", "finance", "marketing")
_DOMAINS += ("support", "logistics", "billing", "crm", "web")
_ENTITIES = ("orders", "items", "accounts", "contacts", "events")
_ENTITIES += ("invoices", "payments", "shipments", "tickets", "campaigns")
_STATUSES = ("open", "closed", "pending", "shipped", "cancelled")
_REGIONS = ("DE", "FR", "US", "GB", "NL", "SE")
_WORDS = ("alpha", "beta", "gamma", "delta", "north", "south")
_WORDS += ("quick", "steady", "bright", "calm", "prime", "urban")


def _wide_ddl() -> list[str]:
    """100 tables x 12 columns: a pk, an FK to the previous table, ten typed business columns."""
    names = [f"{d}_{e}" for d in _DOMAINS for e in _ENTITIES][:WIDE_TABLES]
    statements = []
    for i, name in enumerate(names):
        parent = names[i - 1] if i else None
        columns = [
            "id INTEGER PRIMARY KEY",
            f"{parent}_id INTEGER REFERENCES {parent} (id)" if parent else "parent_id INTEGER",
            "name VARCHAR(80) NOT NULL",
            "status VARCHAR(20)",
            "amount NUMERIC(12,2)",
            "quantity INTEGER",
            "created_at TIMESTAMP NOT NULL",
            "updated_at TIMESTAMP",
            "notes TEXT",
            "region CHAR(2)",
            "is_active BOOLEAN",
            "code VARCHAR(16)",
        ]
        statements.append(f"CREATE TABLE {name} ({', '.join(columns)})")
    return statements


def _wide_rows(conn: sa.Connection) -> None:
    rng = random.Random(8)
    tables = [f"{d}_{e}" for d in _DOMAINS for e in _ENTITIES][:WIDE_TABLES]
    for table in tables:
        for row in range(1, WIDE_ROWS + 1):
            words = " ".join(rng.choice(_WORDS) for _ in range(5))
            values = (
                row,
                rng.randint(1, WIDE_ROWS),
                f"{table.split('_')[1][:-1]} {rng.choice(_WORDS)} {row}",
                rng.choice(_STATUSES),
                f"{rng.uniform(5, 5000):.2f}",
                rng.randint(1, 50),
                f"2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 0{rng.randint(0, 9)}:15:00",
                f"2025-1{rng.randint(0, 2)}-0{rng.randint(1, 9)} 1{rng.randint(0, 9)}:45:00",
                words.capitalize() + ".",
                rng.choice(_REGIONS),
                rng.randint(0, 1),
                f"{table[:3].upper()}-{rng.randint(1000, 9999)}",
            )
            conn.exec_driver_sql(f"INSERT INTO {table} VALUES ({', '.join('?' * 12)})", values)


def _make_wide(url: str) -> list[str]:
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            for statement in _wide_ddl():
                conn.exec_driver_sql(statement)
            _wide_rows(conn)
    finally:
        engine.dispose()
    return [f"{d}_{e}" for d in _DOMAINS for e in _ENTITIES][:WIDE_TABLES]


# -- measuring ---------------------------------------------------------------------------------


def _compare(url: str, tables: list[str], questions: tuple[str, ...]) -> dict[str, Any]:
    requests = asyncio.run(_relay_requests(url, tables, questions))
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        table_info = langchain_table_info(engine, tables)
    finally:
        engine.dispose()
    rows = []
    for question, request in zip(questions, requests, strict=True):
        theirs = langchain_prompt("SQLite", table_info, question)
        ours_text = _request_text(request)
        relay_tokens = estimate_request_tokens(request)
        langchain_tokens = estimate_tokens(theirs)
        rows.append(
            {
                "question": question,
                "relay_tokens": relay_tokens,
                "langchain_tokens": langchain_tokens,
                "ratio": relay_tokens / langchain_tokens,
                "relay_pieces": len(_PIECES.findall(ours_text)),
                "langchain_pieces": len(_PIECES.findall(theirs)),
            }
        )
    for row in rows:
        row["pieces_ratio"] = row["relay_pieces"] / row["langchain_pieces"]
    return {
        "relations": len(tables),
        "questions": len(questions),
        "relay_tokens_median": statistics.median(r["relay_tokens"] for r in rows),
        "langchain_tokens_median": statistics.median(r["langchain_tokens"] for r in rows),
        "ratio_median": statistics.median(r["ratio"] for r in rows),
        "ratio_max": max(r["ratio"] for r in rows),
        "pieces_ratio_median": statistics.median(r["pieces_ratio"] for r in rows),
        "relay_fixed_tokens": _fixed_tokens(requests[0]),
        "langchain_table_info_tokens": estimate_tokens(table_info),
        "per_question": rows,
    }


def _print(label: str, r: dict[str, Any]) -> None:
    print(f"-- {label}: {r['relations']} relations, {r['questions']} questions (chars/4 tokens)")
    print(f"{'question':<52} {'relay_nb':>9} {'LangChain':>10} {'ratio':>7}")
    for row in r["per_question"]:
        print(
            f"{row['question'][:52]:<52} {row['relay_tokens']:>9} {row['langchain_tokens']:>10} "
            f"{row['ratio']:>7.3f}"
        )
    print(
        f"{'median':<52} {r['relay_tokens_median']:>9.0f} {r['langchain_tokens_median']:>10.0f} "
        f"{r['ratio_median']:>7.3f}   target <= {TARGET:.3f}"
    )
    print(
        f"  lexical pieces ratio (tokenizer-free check): {r['pieces_ratio_median']:.3f}; "
        f"relay_nb's fixed part (rules + tool declarations) {r['relay_fixed_tokens']} tokens; "
        f"LangChain table info {r['langchain_table_info_tokens']} tokens"
    )


def run() -> dict[str, Any]:
    results: dict[str, Any] = {"tokenizer": "chars/4 (relay_nb estimate_tokens)", "target": TARGET}
    with tempfile.TemporaryDirectory(prefix="relay_tokens_") as scratch:
        shop = f"sqlite:///{Path(scratch) / 'shop.db'}"
        seed_database(shop)
        results["shop"] = _compare(shop, list(ALLOWED_TABLES), SHOP_QUESTIONS)
        _print("shop", results["shop"])
        wide = f"sqlite:///{Path(scratch) / 'wide.db'}"
        results["wide"] = _compare(wide, _make_wide(wide), WIDE_QUESTIONS)
        _print(f"warehouse ({WIDE_TABLES} tables x 12 columns)", results["wide"])
    return results


if __name__ == "__main__":
    run()
