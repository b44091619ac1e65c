"""The demo's sample database: two years of a small online coffee-and-tea shop, in SQLite.

``relay-nb demo`` needs data a newcomer recognises at a glance and that has something to find:
customers in ten countries who signed up over three years, a catalogue of six categories,
and a few thousand orders whose volume grows over time, peaks every November and December,
and dips after the holidays. Big-ticket equipment is refunded more often than beans, a few
customers spend far more than the rest, and some orders are cancelled — so "which category
has the most refunds?" or "who are our best customers?" have real, non-obvious answers.

Everything comes from one seeded :class:`random.Random` and the end date (``today``): the same
two give the same rows on every machine. Dates are stored as ISO text (SQLite's date
functions read that), money in EUR as ``NUMERIC(10,2)``; order totals are the exact sum of
their lines. Orders run from 730 days before ``today`` up to yesterday, so the previous
calendar year is always complete. Stdlib only; building the file takes tens of milliseconds.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
import os
import random
import sqlite3
import tempfile
import time
import unicodedata
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relay_nb.errors import ConfigurationError

__all__ = [
    "APPLICATION_ID",
    "DEFAULT_SEED",
    "DEMO_TABLES",
    "ORDER_DAYS",
    "ShopDatabase",
    "build_shop_database",
    "check_database_target",
    "generate_shop",
]

DEFAULT_SEED = 20240917
DEMO_TABLES: tuple[str, ...] = ("customers", "products", "orders", "order_items")
ORDER_DAYS = 730
"""Orders are placed on the 730 days before ``today`` (today itself has none yet)."""
APPLICATION_ID = 0x524C4E42  # "RLNB" in SQLite's header: marks a file this module wrote

_N_CUSTOMERS = 900
_N_ORDERS = 3200
_SIGNUP_DAYS = 1095

SHOP_DESCRIPTION = (
    "Northwind Roasters, an online coffee and tea shop shipping from the EU. Prices and order "
    "totals are in EUR. orders.status is 'paid', 'refunded' or 'cancelled'; revenue means the "
    "totals of paid orders. Dates are ISO text (ordered_at 'YYYY-MM-DD HH:MM:SS')."
)

# --------------------------------------------------------------------------------------------
# The catalogue: (name, category, price in cents).

_CATALOGUE: tuple[tuple[str, str, int], ...] = (
    ("Ethiopia Yirgacheffe 250g", "Coffee", 1450),
    ("Colombia Huila 250g", "Coffee", 1290),
    ("Kenya AA 250g", "Coffee", 1690),
    ("Guatemala Antigua 250g", "Coffee", 1390),
    ("Sumatra Mandheling 250g", "Coffee", 1420),
    ("Brazil Cerrado 1kg", "Coffee", 3200),
    ("House Espresso 1kg", "Coffee", 2950),
    ("Decaf Swiss Water 250g", "Coffee", 1350),
    ("Cold Brew Blend 500g", "Coffee", 1850),
    ("Earl Grey 100g", "Tea", 790),
    ("Sencha 100g", "Tea", 950),
    ("Assam Breakfast 250g", "Tea", 1120),
    ("Rooibos Vanilla 100g", "Tea", 690),
    ("Jasmine Pearls 50g", "Tea", 1250),
    ("Matcha Ceremonial 30g", "Tea", 2400),
    ("Chamomile 50g", "Tea", 590),
    ("Oolong Tieguanyin 100g", "Tea", 1380),
    ("Burr Grinder", "Equipment", 13900),
    ("Espresso Machine Duo", "Equipment", 54900),
    ("Pour-over Kettle", "Equipment", 6400),
    ("French Press 1L", "Equipment", 3490),
    ("AeroPress", "Equipment", 3990),
    ("Moka Pot 6-cup", "Equipment", 3250),
    ("Milk Frother", "Equipment", 7900),
    ("Digital Scale", "Equipment", 4490),
    ("Cold Brew Tower", "Equipment", 18900),
    ("Ceramic Mug", "Tableware", 1400),
    ("Double-wall Glasses (2)", "Tableware", 2200),
    ("Glass Teapot 1L", "Tableware", 2990),
    ("Travel Tumbler", "Tableware", 2490),
    ("Espresso Cups (4)", "Tableware", 2750),
    ("Tea Bowl", "Tableware", 1650),
    ("Paper Filters (100)", "Accessories", 550),
    ("Descaling Solution", "Accessories", 990),
    ("Cleaning Tablets (60)", "Accessories", 1290),
    ("Tamper 58mm", "Accessories", 2900),
    ("Knock Box", "Accessories", 2400),
    ("Tea Infuser", "Accessories", 850),
    ("Coffee Canister", "Accessories", 2100),
    ("Gift Card 25", "Gifts", 2500),
    ("Gift Card 50", "Gifts", 5000),
    ("Tasting Box (4 coffees)", "Gifts", 3900),
    ("Tea Discovery Set", "Gifts", 3400),
    ("Barista Workshop", "Gifts", 8500),
)

# how often a category lands in a basket, its refund risk per line, and how many units
_POPULARITY = {
    "Coffee": 10.0,
    "Tea": 6.0,
    "Accessories": 3.0,
    "Tableware": 2.0,
    "Equipment": 1.3,
    "Gifts": 1.2,
}
_REFUND_RISK = {
    "Coffee": 0.012,
    "Tea": 0.012,
    "Accessories": 0.02,
    "Tableware": 0.06,  # glass breaks in the post
    "Equipment": 0.11,  # machines arrive broken or disappoint
    "Gifts": 0.005,
}
_MAX_QUANTITY = {
    "Coffee": 3,
    "Tea": 3,
    "Accessories": 3,
    "Tableware": 4,
    "Equipment": 1,
    "Gifts": 2,
}
_CANCEL_RATE = 0.05
_SEASON = {1: 0.8, 2: 0.78, 3: 0.9, 4: 0.95, 5: 1.0, 6: 0.9, 7: 0.85, 8: 0.82, 9: 1.0, 10: 1.05}
_SEASON |= {11: 1.4, 12: 1.65}

# --------------------------------------------------------------------------------------------
# Customers: country -> (weight, first names, last names, cities).


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split(","))


_COUNTRIES: dict[str, tuple[float, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "DE": (
        16,
        _words("Lukas,Anna,Leon,Mia,Finn,Lea,Paul,Hannah,Jonas,Laura,Felix,Marie,Max,Sophie"),
        _words("Müller,Schmidt,Schneider,Fischer,Weber,Meyer,Wagner,Becker,Hoffmann,Koch"),
        _words("Berlin,Hamburg,München,Köln,Frankfurt,Leipzig,Stuttgart"),
    ),
    "US": (
        15,
        _words("James,Mary,Robert,Patricia,Michael,Jennifer,David,Linda,Daniel,Emily,Chris"),
        _words("Smith,Johnson,Williams,Brown,Jones,Garcia,Miller,Davis,Lopez,Clark,Lee"),
        _words("New York,Chicago,Austin,Seattle,Denver,Boston,Portland"),
    ),
    "GB": (
        13,
        _words("Oliver,Amelia,George,Isla,Harry,Ava,Jack,Emily,Charlie,Grace,Thomas,Freya"),
        _words("Smith,Jones,Taylor,Brown,Williams,Wilson,Evans,Thomas,Roberts,Walker"),
        _words("London,Manchester,Bristol,Leeds,Edinburgh,Glasgow,Brighton"),
    ),
    "FR": (
        11,
        _words("Lucas,Emma,Hugo,Léa,Louis,Chloé,Gabriel,Manon,Jules,Camille,Arthur,Inès"),
        _words("Martin,Bernard,Dubois,Thomas,Robert,Richard,Petit,Durand,Leroy,Moreau"),
        _words("Paris,Lyon,Marseille,Toulouse,Bordeaux,Nantes,Lille"),
    ),
    "NL": (
        9,
        _words("Daan,Emma,Sem,Julia,Lucas,Sophie,Milan,Tess,Bram,Fleur,Thijs,Sanne"),
        _words("de Jong,Jansen,de Vries,van den Berg,Bakker,Visser,Smit,Meijer,Mulder"),
        _words("Amsterdam,Rotterdam,Utrecht,Den Haag,Eindhoven,Groningen"),
    ),
    "IT": (
        8,
        _words("Leonardo,Sofia,Francesco,Giulia,Alessandro,Aurora,Lorenzo,Chiara,Marco"),
        _words("Rossi,Russo,Ferrari,Esposito,Bianchi,Romano,Colombo,Ricci,Greco"),
        _words("Roma,Milano,Napoli,Torino,Bologna,Firenze"),
    ),
    "ES": (
        8,
        _words("Hugo,Lucía,Martín,Sofía,Pablo,Paula,Daniel,Carmen,Alejandro,Elena"),
        _words("García,Fernández,González,Rodríguez,López,Martínez,Sánchez,Pérez,Gómez"),
        _words("Madrid,Barcelona,Valencia,Sevilla,Bilbao,Málaga"),
    ),
    "SE": (
        6,
        _words("Lars,Anna,Erik,Maja,Johan,Elsa,Nils,Astrid,Oskar,Ingrid"),
        _words("Andersson,Johansson,Karlsson,Nilsson,Eriksson,Larsson,Olsson,Persson"),
        _words("Stockholm,Göteborg,Malmö,Uppsala"),
    ),
    "CA": (
        7,
        _words("Liam,Olivia,Noah,Emma,William,Charlotte,Ethan,Chloé,Benjamin,Ava"),
        _words("Tremblay,Roy,Smith,Martin,Brown,Wilson,Gagnon,Côté,Campbell"),
        _words("Toronto,Montréal,Vancouver,Calgary,Ottawa"),
    ),
    "AU": (
        7,
        _words("Oliver,Charlotte,Jack,Amelia,William,Isla,Noah,Mia,Lachlan,Zoe"),
        _words("Smith,Jones,Williams,Brown,Wilson,Taylor,Nguyen,Kelly,Ryan"),
        _words("Sydney,Melbourne,Brisbane,Perth,Adelaide"),
    ),
}

# --------------------------------------------------------------------------------------------
# Schema.

_SCHEMA = """
CREATE TABLE customers (
  id INTEGER PRIMARY KEY,
  name VARCHAR(80) NOT NULL,
  email VARCHAR(120) NOT NULL UNIQUE,
  country CHAR(2) NOT NULL,
  city VARCHAR(40) NOT NULL,
  signup_date DATE NOT NULL
);
CREATE TABLE products (
  id INTEGER PRIMARY KEY,
  name VARCHAR(80) NOT NULL,
  category VARCHAR(40) NOT NULL,
  price NUMERIC(10,2) NOT NULL
);
CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers (id),
  ordered_at TIMESTAMP NOT NULL,
  status VARCHAR(12) NOT NULL CHECK (status IN ('paid', 'refunded', 'cancelled')),
  total NUMERIC(10,2) NOT NULL
);
CREATE TABLE order_items (
  id INTEGER PRIMARY KEY,
  order_id INTEGER NOT NULL REFERENCES orders (id),
  product_id INTEGER NOT NULL REFERENCES products (id),
  quantity INTEGER NOT NULL CHECK (quantity > 0),
  unit_price NUMERIC(10,2) NOT NULL
);
CREATE INDEX orders_customer ON orders (customer_id);
CREATE INDEX orders_ordered_at ON orders (ordered_at);
CREATE INDEX order_items_order ON order_items (order_id);
CREATE INDEX order_items_product ON order_items (product_id);
"""

Rows = dict[str, list[tuple[Any, ...]]]


@dataclass(frozen=True)
class ShopDatabase:
    """A built demo database: where it is, the day it ends, and what it holds."""

    path: Path
    today: dt.date
    seed: int
    counts: dict[str, int]
    build_ms: float = field(default=0.0, compare=False)

    @property
    def url(self) -> str:
        """The SQLAlchemy URL to connect it with (``sqlite:///…``)."""
        return "sqlite:///" + self.path.as_posix()

    @property
    def last_year(self) -> int:
        """The last complete calendar year of orders."""
        return self.today.year - 1

    @property
    def first_day(self) -> dt.date:
        return self.today - dt.timedelta(days=ORDER_DAYS)

    @property
    def last_day(self) -> dt.date:
        return self.today - dt.timedelta(days=1)

    @property
    def description(self) -> str:
        """What the model is told about the data (today's date makes "last year" exact)."""
        return f"{SHOP_DESCRIPTION} Today is {self.today.isoformat()}."

    def summary(self) -> str:
        counts = ", ".join(f"{n:,} {table.replace('_', ' ')}" for table, n in self.counts.items())
        return f"{counts}; orders {self.first_day} → {self.last_day}"


# --------------------------------------------------------------------------------------------
# Generation (pure: rows in, no I/O).


def generate_shop(*, seed: int = DEFAULT_SEED, today: dt.date | None = None) -> Rows:
    """Every table's rows, as tuples in column order; same ``seed`` and ``today``, same rows."""
    today = today or dt.date.today()
    rng = random.Random(seed)
    products = [
        (pid, name, category, price / 100)
        for pid, (name, category, price) in enumerate(_CATALOGUE, start=1)
    ]
    customers, appetite = _customers(rng, today)
    orders, items = _orders(rng, today, customers, appetite)
    return {"customers": customers, "products": products, "orders": orders, "order_items": items}


def _ascii(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return folded.lower().replace(" ", "")


def _customers(rng: random.Random, today: dt.date) -> tuple[list[tuple[Any, ...]], list[float]]:
    codes = list(_COUNTRIES)
    weights = [_COUNTRIES[c][0] for c in codes]
    drafted = []
    for _ in range(_N_CUSTOMERS):
        country = rng.choices(codes, weights)[0]
        _, firsts, lasts, cities = _COUNTRIES[country]
        first, last, city = rng.choice(firsts), rng.choice(lasts), rng.choice(cities)
        # more sign-ups lately (the shop grows), the oldest three years ago
        days_ago = int(rng.triangular(2, _SIGNUP_DAYS, 150))
        appetite = rng.lognormvariate(0.0, 0.9)  # a few customers buy far more than the rest
        drafted.append((today - dt.timedelta(days=days_ago), first, last, country, city, appetite))
    drafted.sort(key=lambda row: row[0])  # ids follow sign-up order, as in a real table
    rows, appetites = [], []
    for cid, (signed_up, first, last, country, city, appetite) in enumerate(drafted, start=1):
        email = f"{_ascii(first)}.{_ascii(last)}{cid}@example.com"
        rows.append((cid, f"{first} {last}", email, country, city, signed_up.isoformat()))
        appetites.append(appetite)
    return rows, appetites


def _day_weight(day: dt.date, days_ago: int) -> float:
    trend = 0.65 + 0.7 * (ORDER_DAYS - days_ago) / ORDER_DAYS  # about 2x growth over two years
    weekend = 1.15 if day.weekday() >= 5 else 1.0
    return trend * _SEASON[day.month] * weekend


def _orders(
    rng: random.Random,
    today: dt.date,
    customers: list[tuple[Any, ...]],
    appetite: list[float],
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    days = [today - dt.timedelta(days=ago) for ago in range(1, ORDER_DAYS + 1)]
    day_weights = [_day_weight(day, ago) for ago, day in enumerate(days, start=1)]
    signups = [row[5] for row in customers]  # ISO dates sort as text; customers are sorted
    cumulative = list(_accumulate(appetite))
    product_ids = list(range(1, len(_CATALOGUE) + 1))
    base_popularity = [_POPULARITY[category] for _, category, _ in _CATALOGUE]
    december_popularity = [
        w * (4.0 if _CATALOGUE[i][1] == "Gifts" else 1.0) for i, w in enumerate(base_popularity)
    ]

    drafted = []
    for day in rng.choices(days, day_weights, k=_N_ORDERS):
        # the customer signed up on or before the order day, chosen by appetite
        eligible = bisect.bisect_right(signups, day.isoformat())
        if eligible == 0:
            eligible = 1
            day = dt.date.fromisoformat(signups[0])
        pick = rng.random() * cumulative[eligible - 1]
        customer_id = min(bisect.bisect_right(cumulative, pick), eligible - 1) + 1
        second = rng.randrange(7 * 3600, 24 * 3600)  # shops open 07:00-24:00
        at = dt.datetime.combine(day, dt.time()) + dt.timedelta(seconds=second)
        popularity = december_popularity if day.month == 12 else base_popularity
        lines = _basket(rng, day, product_ids, popularity)
        drafted.append((at, customer_id, lines, _status(rng, today, day, lines)))
    drafted.sort(key=lambda row: row[0])  # ids follow time, as in a real table

    orders, items = [], []
    for oid, (at, customer_id, lines, status) in enumerate(drafted, start=1):
        total = 0
        for product_id, quantity, unit_cents in lines:
            items.append((len(items) + 1, oid, product_id, quantity, unit_cents / 100))
            total += quantity * unit_cents
        orders.append((oid, customer_id, at.isoformat(sep=" "), status, total / 100))
    return orders, items


def _accumulate(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out


def _basket(
    rng: random.Random, day: dt.date, product_ids: list[int], popularity: list[float]
) -> list[tuple[int, int, int]]:
    size = rng.choices((1, 2, 3, 4), (45, 30, 17, 8))[0]
    chosen: list[int] = []
    while len(chosen) < size:
        pid = rng.choices(product_ids, popularity)[0]
        if pid not in chosen:
            chosen.append(pid)
    black_week = day.month == 11 and day.day >= 22
    lines = []
    for pid in sorted(chosen):
        _, category, cents = _CATALOGUE[pid - 1]
        quantity = rng.randint(1, _MAX_QUANTITY[category])
        if black_week and category != "Gifts":
            cents = round(cents * 0.8)
        elif rng.random() < 0.05:
            cents = round(cents * 0.9)  # a voucher
        lines.append((pid, quantity, cents))
    return lines


def _status(
    rng: random.Random, today: dt.date, day: dt.date, lines: list[tuple[int, int, int]]
) -> str:
    if rng.random() < _CANCEL_RATE:
        return "cancelled"
    keep = math.prod(1 - _REFUND_RISK[_CATALOGUE[pid - 1][1]] for pid, _, _ in lines)
    age = (today - day).days
    refund = (1 - keep) * min(1.0, age / 14)  # returns take a couple of weeks to come back
    return "refunded" if rng.random() < refund else "paid"


# --------------------------------------------------------------------------------------------
# Writing the file.


def build_shop_database(
    path: str | os.PathLike[str] | None = None,
    *,
    seed: int = DEFAULT_SEED,
    today: dt.date | None = None,
) -> ShopDatabase:
    """Generate the shop and write it to ``path`` (a new temp dir when None).

    The file is written next to ``path`` and moved into place, so a reader never sees half a
    database. An existing file is replaced only if this module wrote it (its SQLite
    ``application_id`` says so); anything else at ``path`` is refused, never overwritten.
    """
    started = time.perf_counter()
    today = today or dt.date.today()
    if path is None:
        target = Path(tempfile.mkdtemp(prefix="relay-nb-demo-")) / "shop.sqlite"
    else:
        target = Path(path).expanduser().absolute()
    check_database_target(target)
    rows = generate_shop(seed=seed, today=today)
    # a fresh name beside the target (same file system, so the move is atomic); sqlite3
    # creates it with the usual permissions, unlike mkstemp's owner-only file
    scratch = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        _write(scratch, rows, today)
        os.replace(scratch, target)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise
    counts = {table: len(rows[table]) for table in DEMO_TABLES}
    elapsed = (time.perf_counter() - started) * 1000
    return ShopDatabase(path=target, today=today, seed=seed, counts=counts, build_ms=elapsed)


def check_database_target(target: Path) -> None:
    """Refuse a path the demo database cannot or must not be written to (a short error)."""
    parent = target.parent
    if target.is_dir():
        raise ConfigurationError(f"{target} is a directory; give a file path such as shop.sqlite")
    if not parent.is_dir():
        raise ConfigurationError(f"cannot create {target}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ConfigurationError(f"cannot create {target}: directory {parent} is not writable")
    if target.exists() and not _is_demo_file(target):
        raise ConfigurationError(
            f"{target} exists and is not a relay-nb demo database; choose another path "
            "(the demo never overwrites other files)"
        )


def _is_demo_file(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError:
        return False
    # SQLite header: magic string, then the application id as a big-endian int at byte 68
    return (
        header[:16] == b"SQLite format 3\x00"
        and int.from_bytes(header[68:72], "big") == APPLICATION_ID
    )


def _write(path: Path, rows: Rows, today: dt.date) -> None:
    connection = sqlite3.connect(path)
    try:
        connection.executescript(_SCHEMA)
        for table in DEMO_TABLES:
            width = len(rows[table][0])
            marks = ", ".join("?" * width)
            connection.executemany(f"INSERT INTO {table} VALUES ({marks})", rows[table])
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version = {int(today.strftime('%Y%m%d'))}")
        connection.commit()
    finally:
        connection.close()
