"""The demo's offline model: a ``ScriptedRuntime`` that writes real SQL and reads real results.

Without a model configured, ``relay-nb demo`` and its quickstart notebook still run every
other part of a turn for real — context, the SQL guard, read-only execution, rendering, cost
accounting. Only the model's side is scripted, and it is scripted honestly: each step is a
callable that looks at the request like a model would. Shown a question it knows, it calls
``query_shop`` with the SQL for it; shown the tool's result, it composes the answer from the
rows in that result (the CSV the connector sent back), so every number in an answer is one
the database returned in this run — nothing is written in advance.

It knows three kinds of question (revenue by month in a year, top N customers by revenue,
refunds by product category) in any order and any number of times, so re-running a notebook
cell works; anything else gets a plain "I only know these" answer instead of a failure.
"""

from __future__ import annotations

import calendar
import csv
import re
from collections.abc import Callable
from typing import Any

from relay_nb.demo.data import ShopDatabase
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import InvocationRequest, Message

__all__ = ["DEMO_QUESTIONS", "SCRIPTED_MODEL_ID", "demo_questions", "scripted_demo_model"]

SCRIPTED_MODEL_ID = "claude-haiku-4-5"
"""The model the scripted replies are priced as (estimated tokens at its published rates)."""

DEMO_QUESTIONS: tuple[str, ...] = (
    "What was our revenue by month in {last_year}?",
    "Who are our top 5 customers by revenue?",
    "Which product category has the most refunds?",
)
"""The demo's questions; ``{last_year}`` is the shop's last complete calendar year."""

# A ScriptedRuntime consumes one step per model call; the responder below handles any call, so
# the script is that one responder repeated — enough for a long notebook session.
_SCRIPT_LENGTH = 2000

_REVENUE_SQL = """\
SELECT strftime('%Y-%m', ordered_at) AS month,
       COUNT(*) AS paid_orders,
       ROUND(SUM(total), 2) AS revenue_eur
FROM orders
WHERE status = 'paid'
  AND ordered_at >= '{year}-01-01' AND ordered_at < '{next_year}-01-01'
GROUP BY month
ORDER BY month"""

_TOP_CUSTOMERS_SQL = """\
SELECT c.name, c.country, COUNT(*) AS paid_orders, ROUND(SUM(o.total), 2) AS revenue_eur
FROM orders AS o
JOIN customers AS c ON c.id = o.customer_id
WHERE o.status = 'paid'
GROUP BY c.id, c.name, c.country
ORDER BY revenue_eur DESC
LIMIT {n}"""

_REFUNDS_SQL = """\
SELECT p.category,
       COUNT(DISTINCT CASE WHEN o.status = 'refunded' THEN o.id END) AS refunded_orders,
       COUNT(DISTINCT o.id) AS orders,
       ROUND(100.0 * COUNT(DISTINCT CASE WHEN o.status = 'refunded' THEN o.id END)
             / COUNT(DISTINCT o.id), 1) AS refund_rate_pct
FROM order_items AS oi
JOIN orders AS o ON o.id = oi.order_id
JOIN products AS p ON p.id = oi.product_id
GROUP BY p.category
ORDER BY refunded_orders DESC, p.category"""

Row = dict[str, str]


def demo_questions(shop: ShopDatabase) -> list[str]:
    """The three questions, with the shop's last complete year filled in."""
    return [q.format(last_year=shop.last_year) for q in DEMO_QUESTIONS]


def scripted_demo_model(shop: ShopDatabase, *, connector_id: str = "shop") -> ScriptedRuntime:
    """The offline model for ``shop`` (see the module docstring), priced as Haiku."""
    respond = _Responder(shop, connector_id)
    return ScriptedRuntime(
        [respond] * _SCRIPT_LENGTH, model=SCRIPTED_MODEL_ID, id="scripted:relay-nb-demo"
    )


class _Responder:
    """One model call: a tool call for a new question, an answer once the result is in."""

    def __init__(self, shop: ShopDatabase, connector_id: str) -> None:
        self.shop = shop
        self.tool = f"query_{connector_id}"

    def __call__(self, request: InvocationRequest) -> dict[str, Any]:
        question, since = _current_question(request.messages)
        results = [part for message in since for part in _tool_results(message)]
        intent = _intent(question, default_year=self.shop.last_year)
        if intent is None:
            return {"text": _UNKNOWN.format(tool=self.tool)}
        if not results:
            return {"tool_calls": [{"name": self.tool, "input": {"sql": self._sql(*intent)}}]}
        last = results[-1]
        if getattr(last, "is_error", False):
            reason = " ".join(str(last.content).split())[:300]
            return {"text": f"The query failed, so I have no answer: {reason}"}
        kind, parameter = intent
        return {"text": _ANSWERS[kind](parse_result(last.content), parameter)}

    def _sql(self, kind: str, parameter: int) -> str:
        if kind == "revenue":
            return _REVENUE_SQL.format(year=parameter, next_year=parameter + 1)
        if kind == "customers":
            return _TOP_CUSTOMERS_SQL.format(n=parameter)
        return _REFUNDS_SQL


_UNKNOWN = (
    "I am the demo's scripted model, not a real one, so I cannot answer that: offline I only "
    "know three questions (revenue by month for a year, the top customers by revenue, and "
    "refunds by product category). To ask anything, set a real model: %relay --model "
    "anthropic:claude-sonnet-4-6 (with ANTHROPIC_API_KEY set), or relay.configure(model=...)."
)


def _current_question(messages: list[Message]) -> tuple[str, list[Message]]:
    """The latest user question and the messages that followed it in this turn."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and isinstance(message.content, str):
            return message.content, messages[index + 1 :]
    return "", []


def _tool_results(message: Message) -> list[Any]:
    if message.role != "tool" or isinstance(message.content, str):
        return []
    return [part for part in message.content if getattr(part, "type", "") == "tool-result"]


def _intent(question: str, *, default_year: int) -> tuple[str, int] | None:
    """Which of the three questions this is, with its parameter (a year or a count).

    Only a question that asks what one of them answers is recognised: "how many customers
    are in Germany?" mentions customers but is not "the top customers by revenue", and gets
    the honest "I cannot answer that" rather than the top-5 table.
    """
    text = question.lower()
    words = set(re.findall(r"[a-z]+", text))
    if words & {"refund", "refunds", "refunded"} and words & {"category", "categories"}:
        return "refunds", 0
    ranked = words & {"top", "best", "biggest", "largest"}
    if ranked and words & {"customer", "customers"}:
        top = re.search(r"\btop\s+(\d{1,3})\b", text)
        return "customers", int(top.group(1)) if top else 5
    if words & {"revenue", "sales"} and words & {"month", "monthly", "months"}:
        year = re.search(r"\b(20\d\d)\b", text)
        return "revenue", int(year.group(1)) if year else default_year
    return None


def parse_result(content: str) -> list[Row]:
    """The rows of a query tool's result as the model sees it: a count line, a columns line,
    CSV with a header, and possibly a "… showing k of n rows" line."""
    lines = content.splitlines()[2:]
    lines = [line for line in lines if not line.startswith("… showing")]
    return list(csv.DictReader(lines))


# -- answers, composed from the rows ------------------------------------------------------------


def _eur(value: str | float) -> str:
    return f"€{float(value):,.2f}"


def _month_name(month: str) -> str:
    year, number = month.split("-")
    return f"{calendar.month_name[int(number)]} {year}"


def _revenue_answer(rows: list[Row], year: int) -> str:
    if not rows:
        return f"There were no paid orders in {year}, so no revenue."
    total = sum(float(r["revenue_eur"]) for r in rows)
    orders = sum(int(r["paid_orders"]) for r in rows)
    best = max(rows, key=lambda r: float(r["revenue_eur"]))
    worst = min(rows, key=lambda r: float(r["revenue_eur"]))
    return (
        f"Revenue in {year} was {_eur(total)} from {orders:,} paid orders, over "
        f"{len(rows)} months. The strongest month was {_month_name(best['month'])} "
        f"({_eur(best['revenue_eur'])}), the weakest {_month_name(worst['month'])} "
        f"({_eur(worst['revenue_eur'])})."
    )


def _customers_answer(rows: list[Row], n: int) -> str:
    if not rows:
        return "No customer has a paid order yet."
    listed = "; ".join(
        f"{i}. {r['name']} ({r['country']}) {_eur(r['revenue_eur'])} over "
        f"{int(r['paid_orders'])} orders"
        for i, r in enumerate(rows, 1)
    )
    together = sum(float(r["revenue_eur"]) for r in rows)
    return (
        f"Our top {len(rows)} customers by revenue from paid orders: {listed}. "
        f"Together they spent {_eur(together)}."
    )


def _refunds_answer(rows: list[Row], _: int) -> str:
    refunded = [r for r in rows if int(r["refunded_orders"]) > 0]
    if not refunded:
        return "No order has been refunded."
    most = max(refunded, key=lambda r: int(r["refunded_orders"]))
    ties = [r["category"] for r in refunded if r["refunded_orders"] == most["refunded_orders"]]
    rate = max(refunded, key=lambda r: float(r["refund_rate_pct"]))
    lead = (
        f"{most['category']} has the most refunds: {int(most['refunded_orders']):,} refunded "
        f"orders contained it ({most['refund_rate_pct']}% of its {int(most['orders']):,} orders)."
        if len(ties) == 1
        else f"{' and '.join(ties)} tie for the most refunds, with "
        f"{int(most['refunded_orders']):,} refunded orders each."
    )
    if rate["category"] == most["category"]:
        return lead + " It also has the highest refund rate."
    return (
        f"{lead} By rate, though, {rate['category']} is refunded most often: "
        f"{rate['refund_rate_pct']}% of the {int(rate['orders']):,} orders that contained it "
        f"({int(rate['refunded_orders']):,} refunded)."
    )


_ANSWERS: dict[str, Callable[[list[Row], int], str]] = {
    "revenue": _revenue_answer,
    "customers": _customers_answer,
    "refunds": _refunds_answer,
}
