"""Prompt rendering, ranking, describe and search over catalogs read from real databases."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.connectors.sql.introspect import introspect
from relay_nb.sql.catalog.model import Catalog
from relay_nb.sql.prompt.describe import describe_tables
from relay_nb.sql.prompt.ranking import rank_tables, search_tables
from relay_nb.sql.prompt.render import LEGEND, estimate_tokens, render_catalog


@contextmanager
def connected(url: str) -> Iterator[sa.Connection]:
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


def read(url: str, **kw) -> Catalog:
    with connected(url) as conn:
        return introspect(conn, **kw)


@pytest.fixture
def shop(shop_db) -> Catalog:
    return read(shop_db.ro_url)


@pytest.fixture
def sqlite_catalog(sqlite_shop) -> Catalog:
    return read(f"sqlite:///{sqlite_shop}")


def line_of(text: str, table: str) -> str:
    (line,) = [ln for ln in text.splitlines() if re.match(rf"(view )?{table}\(", ln)]
    return line


def column_count(catalog: Catalog) -> int:
    return sum(len(t.columns) for t in catalog.tables)


# -- format -----------------------------------------------------------------------------------


def test_compact_format(shop: Catalog):
    rendered = render_catalog(shop)
    text = rendered.text
    assert text.splitlines()[0] == LEGEND
    assert rendered.shown == tuple(t.qualified_name for t in shop.tables)
    assert rendered.omitted == ()
    assert rendered.token_estimate == -(-len(text) // 4)
    timestamp = "datetime" if shop.dialect == "mysql" else "timestamp"
    assert line_of(text, "orders").startswith(
        f"orders(id int pk, customer_id int → customers.id, ordered_at {timestamp}, status "
    )
    assert re.search(r"total (numeric|decimal)\(10,2\)\?", line_of(text, "orders"))
    assert line_of(text, "order_items").startswith(
        "order_items(order_id int pk → orders.id, product_id int pk → products.id, quantity int"
    )
    assert "email varchar" in line_of(text, "customers")
    view = line_of(text, "customer_revenue")
    assert view.startswith("view customer_revenue(customer_id int, revenue") and "?" not in view
    quote = "`" if shop.dialect == "mysql" else '"'
    assert f"{quote}user{quote} varchar" in line_of(text, "events")  # reserved: quoted
    assert f"{quote}set{quote} varchar" in line_of(text, "events")
    assert "e.g." not in text  # no sample values unless asked


def test_comments_are_short_and_quoted(shop: Catalog):
    text = render_catalog(shop).text
    if shop.dialect == "sqlite":
        assert "--" not in text.split("\n", 1)[1]
        return
    orders = line_of(text, "orders")
    assert orders.endswith(' -- "One row per order placed in 2025-2026"')
    assert '"Order total in EUR; NULL while the order is not…"' in orders  # capped
    assert '"List price in EUR"' in line_of(text, "products")


def test_about_five_tokens_per_column(shop: Catalog):
    """At 6 tokens per column every shop table and column fits: comments give way first."""
    columns = column_count(shop)
    rendered = render_catalog(shop, max_tokens=6 * columns)
    assert rendered.omitted == () and len(rendered.shown) == len(shop.tables)
    assert rendered.token_estimate / columns <= 6
    for table in shop.tables:
        line = line_of(rendered.text, table.name)
        assert all(c.name in line for c in table.columns)
    if shop.dialect == "sqlite":  # nothing to drop: the plain rendering is within budget
        assert render_catalog(shop).token_estimate / columns <= 6


def test_column_comments_go_before_table_comments(shop: Catalog):
    if shop.dialect == "sqlite":
        pytest.skip("SQLite keeps no comments")
    full = render_catalog(shop)
    reduced = render_catalog(shop, max_tokens=full.token_estimate - 1)
    assert reduced.omitted == ()
    assert '"Order lines"' in reduced.text and "List price in EUR" not in reduced.text
    assert reduced.token_estimate < full.token_estimate


def test_schema_qualified_names_outside_the_default_schema(pg_urls):
    catalog = read(pg_urls.ro, schemas=["public", "internal"])
    text = render_catalog(catalog).text
    assert 'internal.audit(id int?, note text?) -- "Back-office notes"' in text
    assert "\norders(" in text  # default schema stays unqualified
    assert render_catalog(catalog).shown[0] == "internal.audit"


# -- budget and ranking -----------------------------------------------------------------------


def test_tight_budget_keeps_the_relevant_tables_and_names_the_rest(shop: Catalog):
    rendered = render_catalog(
        shop,
        max_tokens=110,
        question="Which product categories bring the most revenue?",
        describe_tool="describe_shop",
    )
    assert rendered.token_estimate <= 110
    assert {"products", "customer_revenue"} <= {n.rsplit(".", 1)[-1] for n in rendered.shown}
    assert set(rendered.shown) | set(rendered.omitted) == {t.qualified_name for t in shop.tables}
    assert not set(rendered.shown) & set(rendered.omitted)
    last = rendered.text.splitlines()[-1]
    assert last.startswith(f"-- {len(rendered.omitted)} more tables: ")
    assert last.endswith("(call describe_shop for their columns)")
    for name in rendered.omitted:
        assert name.rsplit(".", 1)[-1] in last


def test_a_budget_too_small_for_any_table(sqlite_catalog: Catalog):
    rendered = render_catalog(sqlite_catalog, max_tokens=5)
    assert rendered.shown == ()
    assert len(rendered.omitted) == len(sqlite_catalog.tables)
    assert rendered.text.splitlines()[0] == LEGEND
    assert rendered.text.splitlines()[-1].startswith("-- 7 more tables")


@pytest.fixture
def warehouse(tmp_path, sqlite_shop) -> Catalog:
    """The shop plus 400 look-alike tables, in one real SQLite file."""
    url = f"sqlite:///{tmp_path}/warehouse.db"
    with connected(f"sqlite:///{sqlite_shop}") as shop_conn:
        ddl = shop_conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL").all()
    subjects = ["inventory", "shipment", "invoice", "supplier", "warehouse", "campaign", "ticket"]
    with connected(url) as conn, conn.begin():
        for (statement,) in ddl:
            conn.exec_driver_sql(statement)
        for i in range(400):
            subject = subjects[i % len(subjects)]
            conn.exec_driver_sql(
                f"CREATE TABLE {subject}_{i:03d} (id INTEGER PRIMARY KEY, {subject}_code TEXT, "
                "created_at TIMESTAMP, amount NUMERIC(12,2), note TEXT)"
            )
    return read(url)


def test_ranking_finds_the_relevant_tables_of_a_large_schema(warehouse: Catalog):
    assert len(warehouse.tables) == 407
    ranked = [t.name for t, _ in rank_tables(warehouse, "revenue per customer country")]
    assert set(ranked[:3]) == {"customers", "customer_revenue", "orders"}
    rendered = render_catalog(
        warehouse, max_tokens=250, question="revenue per customer country", describe_tool="d_wh"
    )
    assert rendered.token_estimate <= 250
    assert {"customers", "customer_revenue", "orders"} <= set(rendered.shown)
    assert len(rendered.omitted) == 407 - len(rendered.shown)
    assert re.search(r", … \d+ more \(call d_wh for their columns\)$", rendered.text)


def test_foreign_key_neighbours_of_hits_come_along(sqlite_catalog: Catalog):
    scores = dict((t.name, s) for t, s in rank_tables(sqlite_catalog, "product categories"))
    assert scores["products"] > scores["order_items"] > 0  # order_items references products
    assert scores["events"] == scores["secrets"] == 0


def test_without_a_question_the_catalog_order_is_kept(sqlite_catalog: Catalog):
    ranked = [t.qualified_name for t, _ in rank_tables(sqlite_catalog, "")]
    assert ranked == [t.qualified_name for t in sqlite_catalog.tables]


# -- search and describe ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("product price", "products"),
        ("revenue", "customer_revenue"),
        ("ordered items quantities", "order_items"),
        ("customer e-mail", "customers"),
        ("Signed up", "customers"),
    ],
)
def test_search_tables(shop: Catalog, query, first):
    found = search_tables(shop, query, limit=3)
    assert found[0].name == first and len(found) <= 3


def test_search_without_matches_is_empty(shop: Catalog):
    assert search_tables(shop, "zebra migration") == []


def test_describe_gives_full_detail(shop: Catalog):
    text = describe_tables(shop, ["orders", "order_items"])
    orders, items = text.split("\n\n")
    assert orders.splitlines()[0].startswith("orders (table")
    for column in ("id", "customer_id", "ordered_at", "status", "total"):
        assert f"\n  {column} " in orders
    assert "  customer_id int" in orders and "not null → customers.id" in orders
    assert "referenced by: order_items(order_id)" in orders
    assert "primary key (order_id, product_id)" in items
    if shop.dialect != "sqlite":  # comments in full, not capped
        assert '"Order total in EUR; NULL while the order is not priced yet"' in orders


def test_describe_reports_unknown_names_with_close_matches(shop: Catalog):
    text = describe_tables(shop, ["ordrs", "customer", "zebra"])
    assert "unknown table 'ordrs'; did you mean orders" in text
    assert "unknown table 'customer'; did you mean customers" in text
    assert "unknown table 'zebra'; no similar table" in text


def test_describe_qualified_pg_table(pg_urls):
    catalog = read(pg_urls.ro, schemas=["public", "internal"])
    text = describe_tables(catalog, "internal.audit")  # a bare string is one name
    assert text.startswith('internal.audit (table, schema internal, 2 columns) -- "Back-office')


# -- sample values ----------------------------------------------------------------------------


def test_sample_values_are_opt_in_and_capped(sqlite_catalog: Catalog):
    values = {
        "orders.status": ["pending", "paid", "shipped", "delivered", "cancelled"],
        "customers.name": ["O'Brien\nsecond line", "x"],
        "events.comment": ["y" * 500],
    }
    text = render_catalog(sqlite_catalog, sample_values=values, sample_value_chars=20).text
    assert "status varchar(20) e.g. 'pending','paid'," in line_of(text, "orders")
    assert "'shipped'" not in text  # over the 20-character cap
    assert "name varchar(80) e.g. 'O''Brien second l…'" in line_of(text, "customers")
    long = re.search(r"comment text\? e\.g\. ('[^,)]*)", line_of(text, "events"))
    assert long and len(long.group(1)) <= 21 and long.group(1).endswith("…'")


def test_estimate_tokens():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


# -- large catalogs: only what is shown (issue 22) --------------------------------------------


def _warehouse_catalog(tables: int) -> Catalog:
    from relay_nb.sql.catalog.model import ColumnInfo, TableInfo

    subjects = ("invoice", "shipment", "supplier", "campaign", "ticket")
    return Catalog(
        dialect="postgres",
        default_schema="public",
        tables=tuple(
            TableInfo(
                schema_name="public" if i % 3 else "mart",
                name=f"{subjects[i % len(subjects)]}_{i:05d}",
                comment="a table" if i % 7 == 0 else None,
                columns=tuple(
                    ColumnInfo(name=f"c{j}_{subjects[j % 5]}", type="integer", comment=None)
                    for j in range(3 + i % 9)
                ),
            )
            for i in range(tables)
        ),
    )


def test_a_large_catalog_renders_only_the_tables_it_shows(monkeypatch):
    """A tight render of 3,000 tables writes full lines for the tables it shows (and those
    it tried), reads the ranking only as far as it packs and names, and still reports every
    omitted table, most relevant first."""
    from relay_nb.sql.prompt import lines as lines_module
    from relay_nb.sql.prompt.ranking import LexicalRanker

    catalog = _warehouse_catalog(3_000)
    built: list[str] = []
    real_line = lines_module._line
    monkeypatch.setattr(
        lines_module, "_line", lambda c, t, *a: built.append(t.name) or real_line(c, t, *a)
    )

    class Counting:
        """The default ranking, counting how much of it a render reads."""

        read = 0

        def rank(self, catalog: Catalog, question: str):
            ranking = LexicalRanker().rank(catalog, question)
            outer = self

            class Counted(type(ranking)):
                def __iter__(self):
                    for pair in ranking:
                        outer.read += 1
                        yield pair

            counted = Counted.__new__(Counted)
            for slot in ("_scored", "_taken", "_tables", "_all"):
                setattr(counted, slot, getattr(ranking, slot))
            return counted

    ranker = Counting()
    question = "supplier 00042 shipment totals"
    rendered = render_catalog(
        catalog, max_tokens=400, question=question, ranker=ranker, describe_tool="describe_w"
    )
    assert rendered.token_estimate <= 400
    assert "supplier_00042(" in rendered.text
    assert 0 < len(rendered.shown) < 60 and len(built) <= len(rendered.shown) + 5
    assert ranker.read < 600  # of 3,000: packed, then named until the line was full
    assert rendered.omitted_count == 3_000 - len(rendered.shown)
    full = [t.qualified_name for t, _ in rank_tables(catalog, question)]
    assert rendered.omitted == tuple(n for n in full if n not in rendered.shown)
    positions = {name: i for i, name in enumerate(t.qualified_name for t in catalog.tables)}
    assert list(rendered.shown) == sorted(rendered.shown, key=positions.__getitem__)
    last = rendered.text.splitlines()[-1]
    assert last.startswith(f"-- {rendered.omitted_count} more tables: ")
    assert re.search(r", … \d+ more \(call describe_w for their columns\)$", last)


@pytest.mark.parametrize("budget", [None, 30, 200, 900, 4_000, 40_000])
def test_every_budget_keeps_its_promises_on_a_large_catalog(budget):
    """Within budget, each table either shown or omitted (never both), the omission line
    counting the rest: whether the whole catalog fits, a step of it, or a ranked part."""
    catalog = _warehouse_catalog(1_500)
    rendered = render_catalog(catalog, max_tokens=budget, question="invoice 00007 campaign")
    everything = {t.qualified_name for t in catalog.tables}
    assert set(rendered.shown) | set(rendered.omitted) == everything
    assert not set(rendered.shown) & set(rendered.omitted)
    assert len(rendered.omitted) == rendered.omitted_count
    if budget is not None:
        assert rendered.token_estimate <= budget
    if rendered.omitted:
        assert rendered.text.splitlines()[-1].startswith(f"-- {rendered.omitted_count} more")
    else:
        assert len(rendered.text.splitlines()) == len(catalog.tables) + 1


def test_a_render_is_a_value_and_asks_its_ranker_once():
    """The omitted tables come from the ranking the render read, not from the ranker asked
    again; equal renders compare equal and pickle; a ranker may yield its ranking, or name
    a table twice (each left-out mention is counted, as before)."""
    import pickle

    catalog = _warehouse_catalog(40)
    calls: list[int] = []

    class Listing:
        def rank(self, catalog: Catalog, question: str):
            calls.append(1)
            return [(t, 1.0 if i < 3 else 0.0) for i, t in enumerate(catalog.tables)]

    class Yielding:
        def rank(self, catalog: Catalog, question: str):
            return ((t, 0.0) for t in catalog.tables)

    class Repeating:
        def rank(self, catalog: Catalog, question: str):
            first, *others = catalog.tables
            return [(first, 1.0), (first, 1.0), *((t, 0.0) for t in others)]

    rendered = render_catalog(catalog, max_tokens=100, question="x", ranker=Listing())
    assert rendered.omitted and rendered.omitted == rendered.omitted and len(calls) == 1
    again = render_catalog(catalog, max_tokens=100, question="x", ranker=Listing())
    assert rendered == again and pickle.loads(pickle.dumps(rendered)) == rendered
    assert pickle.loads(pickle.dumps(again)).omitted == again.omitted
    yielded = render_catalog(catalog, max_tokens=100, question="x", ranker=Yielding())
    assert yielded.omitted_count == 40 - len(yielded.shown) == len(yielded.omitted)
    repeated = render_catalog(catalog, max_tokens=60, question="x", ranker=Repeating())
    assert catalog.tables[0].qualified_name in repeated.shown
    assert repeated.omitted_count == len(repeated.omitted) == 40 - len(repeated.shown)
