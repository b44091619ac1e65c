# ruff: noqa: E501 - the domains and questions are data, one table or question per line
"""A many-domain warehouse and questions with gold SQL, for the schema-linking benchmark.

Thirteen realistic domains (shop, school, geography, cars, HR, music, movies, flights,
hospital, sports, finance, web analytics, hotels; 112 tables) with foreign keys, a few
comments, and rows whose categorical columns hold the values questions name. ``decoys=N``
adds N generated tables built from the same business vocabulary (``claim_ledger``,
``vessel_status``…) with generic columns (status, region, amount…) and values, the way a
real warehouse's other schemas crowd a question's words: 112 + 788 = 900 tables.

Each question is written the way analysts ask (by a table's name, by a **value** the data
holds, by a **synonym**, with a **typo**, or by a **region** of the data); its gold tables are
read from its gold SQL with sqlglot, not listed by hand.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp

# table: "column type", "column -> table" (a foreign key), "column in a|b|c" (a category)
DOMAINS: dict[str, dict[str, tuple[str, ...]]] = {
    "shop": {
        "customers": ("name text", "email text", "country_code text in DE|US|GB|FR|NL", "city text", "segment text in consumer|corporate|home office"),
        "addresses": ("customer_id -> customers", "street text", "postal_code text", "kind text in billing|shipping"),
        "product_categories": ("name text in coffee|tea|equipment|tableware",),
        "products": ("name text", "category_id -> product_categories", "price numeric", "launched_on date"),
        "orders": ("customer_id -> customers", "ordered_at date", "status text in paid|refunded|cancelled|pending", "total numeric"),
        "order_items": ("order_id -> orders", "product_id -> products", "quantity integer", "unit_price numeric"),
        "payments": ("order_id -> orders", "method text in card|paypal|bank transfer|voucher", "amount numeric", "paid_at date"),
        "shipments": ("order_id -> orders", "carrier text in dhl|ups|fedex|postnl", "shipped_at date"),
        "returns": ("order_item_id -> order_items", "reason text in damaged|wrong size|late delivery", "returned_at date"),
        "suppliers": ("name text", "country_code text in CN|VN|BR|IT"),
        "inventory": ("product_id -> products", "warehouse text in north|south", "on_hand integer"),
        "promotions": ("code text", "discount_pct numeric", "starts_on date", "ends_on date"),
    },
    "school": {
        "students": ("first_name text", "last_name text", "age integer", "sex text in F|M", "major text in biology|history|physics|economics"),
        "teachers": ("name text", "hired_on date", "rank text in assistant|associate|full"),
        "courses": ("title text", "credits integer", "teacher_id -> teachers"),
        "enrollments": ("student_id -> students", "course_id -> courses", "grade text in A|B|C|D|F"),
        "school_departments": ("name text in mathematics|languages|sciences|arts",),
        "classrooms": ("building text in north hall|south hall|library", "capacity integer"),
        "pets": ("pet_type text in dog|cat|bird|hamster", "pet_age integer", "weight numeric"),
        "has_pet": ("student_id -> students", "pet_id -> pets"),
        "clubs": ("name text", "category text in sports|music|debate|chess"),
        "club_members": ("club_id -> clubs", "student_id -> students", "role text in member|treasurer|president"),
    },
    "geography": {
        "continents": ("name text in Europe|Asia|Africa|North America|South America|Oceania",),
        "countries": ("name text", "continent_id -> continents", "population integer", "surface_area numeric", "independence_year integer"),
        "country_languages": ("country_id -> countries", "language text in English|Dutch|French|Spanish|German|Arabic|Portuguese", "is_official text in T|F", "percentage numeric"),
        "cities": ("name text", "country_id -> countries", "population integer", "district text"),
        "airports": ("name text", "city_id -> cities", "iata_code text"),
        "rivers": ("name text", "length_km integer", "country_id -> countries"),
        "mountains": ("name text", "height_m integer", "range_name text in Alps|Andes|Himalaya|Rockies"),
        "border_crossings": ("from_country_id -> countries", "to_country_id -> countries", "kind text in road|rail|ferry"),
    },
    "cars": {
        "car_makers": ("maker text in ford|toyota|volkswagen|fiat|renault", "full_name text", "country_id -> countries"),
        "car_models": ("maker_id -> car_makers", "model text"),
        "car_names": ("model_id -> car_models", "make text", "body_style text in sedan|hatchback|suv|wagon"),
        "cars_data": ("car_name_id -> car_names", "mpg numeric", "cylinders integer", "horsepower integer", "weight integer", "year integer"),
        "fuel_types": ("name text in petrol|diesel|electric|hybrid",),
        "dealers": ("name text", "city text", "maker_id -> car_makers"),
        "car_sales": ("dealer_id -> dealers", "car_name_id -> car_names", "sold_on date", "price numeric"),
        "recalls": ("model_id -> car_models", "issue text in brakes|airbag|software|engine", "announced_on date"),
    },
    "hr": {
        "employees": ("first_name text", "last_name text", "hire_date date", "job_id -> jobs", "department_id -> departments", "manager_id -> employees"),
        "departments": ("name text in sales|finance|engineering|marketing|support", "location_id -> locations"),
        "jobs": ("title text", "min_salary numeric", "max_salary numeric"),
        "salaries": ("employee_id -> employees", "amount numeric", "from_date date", "to_date date"),
        "job_history": ("employee_id -> employees", "job_id -> jobs", "start_date date", "end_date date"),
        "locations": ("city text", "country_code text in US|UK|DE|IN", "region_id -> regions"),
        "regions": ("name text in EMEA|APAC|AMER",),
        "benefits": ("employee_id -> employees", "plan text in basic|plus|premium"),
        "leave_requests": ("employee_id -> employees", "leave_type text in sick|vacation|parental|unpaid", "days integer"),
        "performance_reviews": ("employee_id -> employees", "rating text in exceeds|meets|below", "reviewed_on date"),
    },
    "music": {
        "artists": ("name text", "country_code text in US|UK|SE|JM"),
        "albums": ("title text", "artist_id -> artists", "released_year integer"),
        "genres": ("name text in Rock|Jazz|Pop|Classical|Reggae|Metal",),
        "tracks": ("name text", "album_id -> albums", "genre_id -> genres", "milliseconds integer", "unit_price numeric"),
        "playlists": ("name text",),
        "playlist_tracks": ("playlist_id -> playlists", "track_id -> tracks"),
        "music_invoices": ("billing_country text in USA|Canada|Brazil|France", "total numeric", "invoice_date date"),
        "music_invoice_lines": ("invoice_id -> music_invoices", "track_id -> tracks", "quantity integer"),
    },
    "movies": {
        "movies": ("title text", "release_year integer", "director_id -> directors", "studio_id -> studios", "genre text in drama|comedy|horror|animation"),
        "directors": ("name text", "born_year integer"),
        "actors": ("name text", "gender text in female|male"),
        "movie_cast": ("movie_id -> movies", "actor_id -> actors", "character_name text"),
        "movie_ratings": ("movie_id -> movies", "stars integer", "rated_on date"),
        "studios": ("name text", "country_code text in US|FR|IN|JP"),
        "awards": ("movie_id -> movies", "category text in best picture|best director|best actress", "year integer"),
        "box_office": ("movie_id -> movies", "gross numeric", "week integer"),
    },
    "flights": {
        "airlines": ("name text", "abbreviation text", "alliance text in star|oneworld|skyteam"),
        "flights": ("airline_id -> airlines", "flight_no text", "source_airport text", "dest_airport text", "status text in scheduled|delayed|cancelled|landed", "departs_at date"),
        "aircraft": ("model text in A320|B737|A350|E190", "seats integer"),
        "routes": ("airline_id -> airlines", "aircraft_id -> aircraft", "distance_km integer"),
        "passengers": ("name text", "nationality text", "frequent_flyer text in gold|silver|none"),
        "bookings": ("flight_id -> flights", "passenger_id -> passengers", "cabin text in economy|business|first", "fare numeric"),
        "crew_members": ("name text", "role text in pilot|copilot|attendant", "airline_id -> airlines"),
        "baggage": ("booking_id -> bookings", "weight_kg numeric", "lost text in yes|no"),
    },
    "hospital": {
        "patients": ("name text", "born_on date", "insurance text in public|private|none"),
        "physicians": ("name text", "specialty text in cardiology|oncology|pediatrics|surgery"),
        "appointments": ("patient_id -> patients", "physician_id -> physicians", "starts_at date", "outcome text in attended|missed|rescheduled"),
        "procedures": ("name text", "cost numeric"),
        "medications": ("name text", "brand text"),
        "prescriptions": ("patient_id -> patients", "physician_id -> physicians", "medication_id -> medications", "dose text"),
        "wards": ("name text in icu|maternity|general|pediatric", "beds integer"),
        "nurses": ("name text", "ward_id -> wards", "shift text in day|night"),
    },
    "sports": {
        "players": ("name text", "position text in goalkeeper|defender|midfielder|forward", "team_id -> teams", "birth_date date"),
        "teams": ("name text", "city text", "stadium_id -> stadiums"),
        "matches": ("home_team_id -> teams", "away_team_id -> teams", "played_on date", "season_id -> seasons", "home_goals integer", "away_goals integer"),
        "seasons": ("year integer",),
        "goals": ("match_id -> matches", "player_id -> players", "minute integer", "kind text in penalty|header|open play"),
        "stadiums": ("name text", "capacity integer"),
        "coaches": ("name text", "team_id -> teams"),
        "injuries": ("player_id -> players", "injury text in hamstring|knee|ankle|concussion", "out_days integer"),
    },
    "finance": {
        "accounts": ("holder_name text", "account_type text in checking|savings|credit", "opened_on date", "branch_id -> branches"),
        "transactions": ("account_id -> accounts", "amount numeric", "category text in groceries|rent|salary|travel", "booked_on date"),
        "loans": ("account_id -> accounts", "principal numeric", "loan_status text in current|late|default|repaid"),
        "branches": ("name text", "city text"),
        "cards": ("account_id -> accounts", "network text in visa|mastercard|amex", "expires_on date"),
        "exchange_rates": ("currency text in EUR|USD|GBP|JPY", "rate numeric", "rate_date date"),
        "budgets": ("account_id -> accounts", "month date", "planned numeric"),
        "fees": ("account_id -> accounts", "fee_type text in overdraft|wire|atm", "amount numeric"),
    },
    "web": {
        "web_sessions": ("visitor_id -> visitors", "device text in mobile|desktop|tablet", "started_at date", "browser text in chrome|safari|firefox"),
        "page_views": ("session_id -> web_sessions", "url text", "seconds integer"),
        "visitors": ("first_seen date", "country_code text in DE|US|BR|IN"),
        "campaigns": ("name text", "channel text in email|search|social|display", "budget numeric"),
        "conversions": ("session_id -> web_sessions", "campaign_id -> campaigns", "revenue numeric"),
        "ab_tests": ("name text", "variant text in control|treatment", "started_on date"),
        "referrers": ("session_id -> web_sessions", "source text in google|newsletter|twitter|direct"),
        "signups": ("visitor_id -> visitors", "plan text in free|pro|team", "signed_up_on date"),
    },
    "hotels": {
        "hotels": ("name text", "city text", "star_rating integer"),
        "rooms": ("hotel_id -> hotels", "room_type text in single|double|suite", "nightly_rate numeric"),
        "reservations": ("room_id -> rooms", "guest_id -> guests", "check_in date", "check_out date"),
        "guests": ("name text", "loyalty_tier text in bronze|silver|gold"),
        "hotel_reviews": ("hotel_id -> hotels", "guest_id -> guests", "score integer"),
        "amenities": ("hotel_id -> hotels", "amenity text in pool|spa|gym|parking"),
    },
}  # fmt: skip

COMMENTS = {
    "cars_data": "Technical data per car: fuel economy, engine, weight",
    "has_pet": "Which student owns which pet",
    "music_invoices": "Sales of tracks to customers",
    "box_office": "Weekly ticket revenue per film",
    "leave_requests": "Absence requests: holidays and sick days",
}

# (kind, question, gold SQL)
QUESTIONS: tuple[tuple[str, str, str], ...] = (
    ("name", "How many orders were refunded?", "SELECT COUNT(*) FROM orders WHERE status = 'refunded'"),
    ("name", "Average price of products per category", "SELECT c.name, AVG(p.price) FROM products p JOIN product_categories c ON c.id = p.category_id GROUP BY c.name"),
    ("name", "Which carriers shipped the most orders?", "SELECT carrier, COUNT(*) FROM shipments GROUP BY carrier ORDER BY 2 DESC"),
    ("name", "List the students enrolled in each course", "SELECT c.title, s.last_name FROM enrollments e JOIN students s ON s.id = e.student_id JOIN courses c ON c.id = e.course_id"),
    ("name", "Employees hired after 2020 with their job title", "SELECT e.last_name, j.title FROM employees e JOIN jobs j ON j.id = e.job_id WHERE e.hire_date > '2020-12-31'"),
    ("name", "Total box office gross per movie", "SELECT m.title, SUM(b.gross) FROM box_office b JOIN movies m ON m.id = b.movie_id GROUP BY m.title"),
    ("name", "Which airlines have the most flights?", "SELECT a.name, COUNT(*) FROM flights f JOIN airlines a ON a.id = f.airline_id GROUP BY a.name"),
    ("name", "Number of appointments per physician", "SELECT p.name, COUNT(*) FROM appointments a JOIN physicians p ON p.id = a.physician_id GROUP BY p.name"),
    ("name", "Goals scored per player", "SELECT p.name, COUNT(*) FROM goals g JOIN players p ON p.id = g.player_id GROUP BY p.name"),
    ("name", "Average nightly rate of rooms per hotel", "SELECT h.name, AVG(r.nightly_rate) FROM rooms r JOIN hotels h ON h.id = r.hotel_id GROUP BY h.name"),
    ("name", "Tracks per genre", "SELECT g.name, COUNT(*) FROM tracks t JOIN genres g ON g.id = t.genre_id GROUP BY g.name"),
    ("name", "Page views per session", "SELECT session_id, COUNT(*) FROM page_views GROUP BY session_id"),
    ("value", "How many students have a dog?", "SELECT COUNT(DISTINCT h.student_id) FROM has_pet h JOIN pets p ON p.id = h.pet_id WHERE p.pet_type = 'dog'"),
    ("value", "Which countries have English and Dutch as languages?", "SELECT c.name FROM countries c JOIN country_languages l ON l.country_id = c.id WHERE l.language IN ('English', 'Dutch')"),
    ("value", "How much was paid by paypal?", "SELECT SUM(amount) FROM payments WHERE method = 'paypal'"),
    ("value", "How many flights were delayed?", "SELECT COUNT(*) FROM flights WHERE status = 'delayed'"),
    ("value", "Bookings in business cabin", "SELECT COUNT(*) FROM bookings WHERE cabin = 'business'"),
    ("value", "Players who are goalkeepers", "SELECT name FROM players WHERE position = 'goalkeeper'"),
    ("value", "How many sessions came from mobile?", "SELECT COUNT(*) FROM web_sessions WHERE device = 'mobile'"),
    ("value", "Total spent on groceries", "SELECT SUM(amount) FROM transactions WHERE category = 'groceries'"),
    ("value", "Which suites cost more than 300 a night?", "SELECT id FROM rooms WHERE room_type = 'suite' AND nightly_rate > 300"),
    ("value", "Number of diesel and electric fuel types", "SELECT name FROM fuel_types WHERE name IN ('diesel', 'electric')"),
    ("value", "Which jazz albums were released after 2000?", "SELECT DISTINCT a.title FROM albums a JOIN tracks t ON t.album_id = a.id JOIN genres g ON g.id = t.genre_id WHERE g.name = 'Jazz' AND a.released_year > 2000"),
    ("value", "How many loans are in default?", "SELECT COUNT(*) FROM loans WHERE loan_status = 'default'"),
    ("value", "Patients seen by oncology", "SELECT DISTINCT pa.name FROM appointments a JOIN physicians p ON p.id = a.physician_id JOIN patients pa ON pa.id = a.patient_id WHERE p.specialty = 'oncology'"),
    ("value", "How many horror films came out each year?", "SELECT release_year, COUNT(*) FROM movies WHERE genre = 'horror' GROUP BY release_year"),
    ("value", "Nurses working the night shift in the icu", "SELECT n.name FROM nurses n JOIN wards w ON w.id = n.ward_id WHERE n.shift = 'night' AND w.name = 'icu'"),
    ("synonym", "How many clients per nation?", "SELECT country_code, COUNT(*) FROM customers GROUP BY country_code"),
    ("synonym", "Which vendors are based in Italy?", "SELECT name FROM suppliers WHERE country_code = 'IT'"),
    ("synonym", "Average wage of staff", "SELECT AVG(amount) FROM salaries"),
    ("synonym", "List every pupil and their age", "SELECT first_name, age FROM students"),
    ("synonym", "Which instructors teach more than two classes?", "SELECT t.name FROM courses c JOIN teachers t ON t.id = c.teacher_id GROUP BY t.name HAVING COUNT(*) > 2"),
    ("synonym", "How many films did each filmmaker make?", "SELECT d.name, COUNT(*) FROM movies m JOIN directors d ON d.id = m.director_id GROUP BY d.name"),
    ("synonym", "Which musicians have the most records?", "SELECT ar.name, COUNT(*) FROM albums al JOIN artists ar ON ar.id = al.artist_id GROUP BY ar.name"),
    ("synonym", "Which automobile manufacturers are there?", "SELECT full_name FROM car_makers"),
    ("synonym", "Which towns have more than a million inhabitants?", "SELECT name FROM cities WHERE population > 1000000"),
    ("synonym", "Staff per division", "SELECT d.name, COUNT(*) FROM employees e JOIN departments d ON d.id = e.department_id GROUP BY d.name"),
    ("typo", "list all carr makers", "SELECT maker FROM car_makers"),
    ("typo", "how many custmers signed up", "SELECT COUNT(*) FROM customers"),
    ("typo", "averge horsepowr of cars", "SELECT AVG(horsepower) FROM cars_data"),
    ("typo", "number of enrolments per cours", "SELECT course_id, COUNT(*) FROM enrollments GROUP BY course_id"),
    ("typo", "which airprots are in each city", "SELECT c.name, a.name FROM airports a JOIN cities c ON c.id = a.city_id"),
    ("typo", "total invoise amount for music", "SELECT SUM(total) FROM music_invoices"),
    ("typo", "stadum capacity of each team", "SELECT t.name, s.capacity FROM teams t JOIN stadiums s ON s.id = t.stadium_id"),
    ("region", "How many European countries are there?", "SELECT COUNT(*) FROM countries c JOIN continents k ON k.id = c.continent_id WHERE k.name = 'Europe'"),
    ("region", "Population of Asian cities", "SELECT SUM(ci.population) FROM cities ci JOIN countries c ON c.id = ci.country_id JOIN continents k ON k.id = c.continent_id WHERE k.name = 'Asia'"),
    ("region", "Employees in the EMEA region", "SELECT COUNT(*) FROM employees e JOIN departments d ON d.id = e.department_id JOIN locations l ON l.id = d.location_id JOIN regions r ON r.id = l.region_id WHERE r.name = 'EMEA'"),
    ("region", "Mountains in the Alps higher than 4000 m", "SELECT name FROM mountains WHERE range_name = 'Alps' AND height_m > 4000"),
    ("region", "Which African countries speak French?", "SELECT c.name FROM countries c JOIN continents k ON k.id = c.continent_id JOIN country_languages l ON l.country_id = c.id WHERE k.name = 'Africa' AND l.language = 'French'"),
    ("region", "Invoices billed to Brazil", "SELECT COUNT(*) FROM music_invoices WHERE billing_country = 'Brazil'"),
)  # fmt: skip

_NOUNS = [
    "ledger",
    "claim",
    "policy",
    "vessel",
    "ticket",
    "asset",
    "contract",
    "invoice_batch",
    "parcel",
    "route_plan",
    "warehouse_bin",
    "forecast",
    "quota",
    "territory",
    "lead",
    "opportunity",
    "subscription",
    "device",
    "sensor",
    "reading",
    "firmware",
    "incident",
    "alert",
    "shift",
    "timesheet",
    "project",
    "milestone",
    "task",
    "sprint",
    "release",
    "build",
    "deployment",
    "server",
    "cluster",
    "bucket",
    "job_run",
    "pipeline",
    "dataset",
    "report",
    "dashboard",
    "widget",
    "survey",
    "response",
    "question",
    "answer",
    "feedback",
    "complaint",
    "refund",
    "voucher",
    "coupon",
    "gift_card",
    "store_visit",
    "footfall",
    "kiosk",
    "terminal",
    "batch",
    "lot",
    "recipe",
    "ingredient",
    "menu",
    "dish",
    "meal",
    "supplier_rating",
    "contractor",
    "permit",
    "inspection",
    "violation",
    "fine",
    "parking_spot",
    "toll",
    "vehicle_log",
    "trip",
    "driver",
    "route",
    "stop",
    "schedule",
    "timetable",
    "license",
    "certificate",
    "training",
    "module",
    "exam",
    "attempt",
    "badge",
    "donation",
    "donor",
    "grant",
    "pledge",
    "volunteer",
    "event_ticket",
    "venue",
    "seat",
    "tier",
    "membership",
    "renewal",
    "campaign_cost",
    "lead_score",
    "ad_group",
    "keyword",
    "bid",
    "impression",
    "click",
    "placement",
    "creative",
]
_SUFFIXES = (
    "log",
    "status",
    "summary",
    "detail",
    "map",
    "history",
    "snapshot",
    "daily",
    "stage",
    "archive",
)
_COLUMNS = (
    "name text", "code text", "description text", "status text in open|closed|pending|archived",
    "region text in north|south|east|west", "kind text in standard|premium|internal",
    "priority text in low|medium|high", "amount numeric", "quantity integer",
    "created_at date", "updated_at date", "owner text", "notes text", "score numeric",
    "channel text in web|store|phone", "currency text in EUR|USD", "level integer",
)  # fmt: skip


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    ref: str | None = None
    values: tuple[str, ...] = ()


def parse(spec: str) -> Column:
    name, rest = spec.split(" ", 1)
    if rest.startswith("-> "):
        return Column(name, "integer", ref=rest[3:])
    if " in " in rest:
        type_, values = rest.split(" in ", 1)
        return Column(name, type_, values=tuple(values.split("|")))
    return Column(name, rest)


def tables(decoys: int = 0, seed: int = 7) -> dict[str, tuple[Column, ...]]:
    """Every table's columns (after ``id``): the domains, then ``decoys`` generated ones."""
    found = {
        name: tuple(parse(c) for c in columns)
        for domain in DOMAINS.values()
        for name, columns in domain.items()
    }
    rng = random.Random(seed)
    names = [f"{a}_{b}" for a in _NOUNS for b in _SUFFIXES]
    rng.shuffle(names)
    made: list[str] = []
    for name in names[:decoys]:
        columns = [parse(c) for c in rng.sample(_COLUMNS, rng.randint(3, 7))]
        if made and rng.random() < 0.5:
            target = rng.choice(made)
            columns.append(Column(f"{target}_id", "integer", ref=target))
        found[name] = tuple(columns)
        made.append(name)
    return found


def build(
    path: Path, decoys: int = 0, rows: int = 30, seed: int = 7
) -> dict[str, tuple[Column, ...]]:
    """Create the warehouse as a SQLite file with ``rows`` rows per table."""
    schema = tables(decoys, seed)
    rng = random.Random(seed)
    with sqlite3.connect(path) as conn:
        for statement in ddl(schema, "sqlite"):
            conn.execute(statement)
        for name, columns in schema.items():
            conn.executemany(insert(name, columns, "?"), list(data(columns, rows, rng)))
    return schema


def ddl(schema: dict[str, tuple[Column, ...]], dialect: str, prefix: str = "") -> Iterator[str]:
    """CREATE statements; foreign keys inline on SQLite, added once all tables exist elsewhere
    (and table comments there, where SQLite has none)."""
    types = {
        "text": "VARCHAR(80)",
        "numeric": "NUMERIC(12,2)",
        "date": "DATE",
        "integer": "INTEGER",
    }
    later: list[str] = []
    for name, columns in schema.items():
        parts = ["id INTEGER PRIMARY KEY"]
        for c in columns:
            parts.append(f"{c.name} {types[c.type]}")
            if c.ref and dialect == "sqlite":
                parts[-1] += f" REFERENCES {c.ref} (id)"
            elif c.ref:
                later.append(
                    f"ALTER TABLE {prefix}{name} ADD FOREIGN KEY ({c.name}) "
                    f"REFERENCES {prefix}{c.ref} (id)"
                )
        yield f"CREATE TABLE {prefix}{name} ({', '.join(parts)})"
        comment = COMMENTS.get(name)
        if comment and dialect != "sqlite":
            later.append(f"COMMENT ON TABLE {prefix}{name} IS '{comment}'")
    yield from later


def insert(name: str, columns: Sequence[Column], mark: str, prefix: str = "") -> str:
    names = ", ".join(["id", *(c.name for c in columns)])
    return f"INSERT INTO {prefix}{name} ({names}) VALUES ({', '.join([mark] * (len(columns) + 1))})"


def data(columns: Sequence[Column], rows: int, rng: random.Random) -> Iterator[tuple]:
    for i in range(1, rows + 1):
        row: list[object] = [i]
        for c in columns:
            if c.ref:
                row.append(rng.randint(1, 30))
            elif c.values:
                row.append(rng.choice(c.values))
            elif c.type == "text":
                row.append(f"{c.name} {i}")
            elif c.type == "date":
                row.append(
                    f"20{rng.randint(18, 26)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                )
            else:
                row.append(rng.randint(1, 5000))
        yield tuple(row)


def gold_tables(sql: str) -> frozenset[str]:
    return frozenset(t.name for t in sqlglot.parse_one(sql, read="sqlite").find_all(exp.Table))


def gold_columns(sql: str) -> frozenset[str]:
    return frozenset(c.name for c in sqlglot.parse_one(sql, read="sqlite").find_all(exp.Column))
