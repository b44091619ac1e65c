"""The warehouse families' function catalogs (relay_nb/sql/guard/functions/<family>.txt): the
files parse and say where they come from, documented functions pass the guard, the dangerous
ones stay refused with the rule that refuses them, and the lists agree with the shared
denylists (a listed name those refuse is named in the file's header)."""

from __future__ import annotations

import re
import time
from importlib import resources

import pytest
from sqlglot import exp

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard import functions
from relay_nb.sql.guard.functions import FAMILIES, documented_functions, header
from relay_nb.sql.guard.policies import policy_for
from relay_nb.sql.guard.policies.base import GuardPolicy, _function_verdict
from relay_nb.sql.guard.query import guard_query

DIALECT = {
    "bigquery": "bigquery",
    "clickhouse": "clickhouse",
    "clickhouse_aggregates": "clickhouse",
    "redshift": "redshift",
    "snowflake": "snowflake",
    "spark": "spark",
    "trino": "trino",
    "tsql": "tsql",
}
TABLES = {(None, "t")}
KEPT_DENIED = "kept denied by the shared rules:"


def guard(sql: str, dialect: str) -> str:
    return guard_query(
        sql, dialect=dialect, allowed_tables=TABLES, default_schema=None, row_limit=100
    ).sql


def refusal(sql: str, dialect: str) -> UnsafeQueryError:
    with pytest.raises(UnsafeQueryError) as caught:
        guard(sql, dialect)
    return caught.value


def shared_refusal(name: str, policy: type[GuardPolicy]) -> str | None:
    """The rule the denylists refuse ``name`` by when it is called as an unknown function
    (a dotted name is also checked by its last part, the call sqlglot leaves inside
    ``NET.x(…)`` and ``SAFE.x(…)``)."""
    for candidate in dict.fromkeys((name, name.rsplit(".", 1)[-1])):
        verdict = _function_verdict(exp.Anonymous(this=candidate), (candidate,), policy)
        if verdict:
            return verdict[0]
    return None


# -- the files -----------------------------------------------------------------------------------


def test_every_family_file_is_in_the_package_and_nothing_else_is() -> None:
    files = {p.name for p in resources.files(functions).iterdir() if p.name.endswith(".txt")}
    assert files == {f"{family}.txt" for family in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_a_file_is_a_header_then_sorted_lowercase_names(family: str) -> None:
    text = resources.files(functions).joinpath(f"{family}.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    body = [line for line in lines if not line.startswith("#")]
    assert lines[0].startswith("#") and all(line.startswith("#") for line in lines[: -len(body)])
    assert body == sorted(set(body)), "one name a line, sorted, no repeats"
    assert all(re.fullmatch(r"[a-z_][a-z0-9_$]*(\.[a-z_][a-z0-9_]*)?", n) for n in body)
    assert documented_functions(family) == frozenset(body)
    count = next(line for line in header(family) if line.startswith("count:"))
    assert int(count.split(":")[1]) == len(body)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_header_names_its_source_its_date_its_licence_and_what_it_removed(family: str) -> None:
    lines = header(family)
    sources = [line for line in lines if line.startswith("source: ")]
    assert sources and all(re.search(r"https://|itself \(", s) for s in sources), sources
    assert re.search(r"[0-9a-f]{40}|\d+\.\d+\.\d+", " ".join(sources)), "a commit or a version"
    assert any(re.fullmatch(r"retrieved: \d{4}-\d{2}-\d{2}", line) for line in lines)
    assert any(line.startswith("licence: ") for line in lines)
    assert any(line.startswith("derived: ") for line in lines)
    assert sum(line.startswith(KEPT_DENIED) for line in lines) == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_the_lists_and_the_shared_denylists_do_not_silently_disagree(family: str) -> None:
    """A listed name the denylists refuse must be named in the header, and only those."""
    policy = policy_for(DIALECT[family])
    refused = {n for n in documented_functions(family) if shared_refusal(n, policy)}
    line = next(line for line in header(family) if line.startswith(KEPT_DENIED))
    named = set(line.removeprefix(KEPT_DENIED).split()) - {"-"}
    assert refused == named


@pytest.mark.parametrize("family", FAMILIES)
def test_removed_names_are_not_listed(family: str) -> None:
    removed = set()
    for line in header(family):
        if line.startswith("removed ("):
            removed |= set(line.rsplit("):", 1)[1].split())
    if family != "clickhouse_aggregates":  # nothing among the aggregates needed removing
        assert removed, "each file says what it removed"
    assert not removed & documented_functions(family)


# -- documented functions pass -------------------------------------------------------------------

DOCUMENTED_CALLS = [
    # BigQuery's geography family, well beyond the five the hand-written list had
    ("bigquery", "SELECT ST_CONVEXHULL(g), ST_AREA(g), ST_BUFFER(g, 10.0) FROM t"),
    ("bigquery", "SELECT ST_CENTROID_AGG(g), ST_UNION_AGG(g), ST_EXTENT(g) FROM t"),
    ("bigquery", "SELECT ST_DISTANCE(g, ST_GEOGPOINT(1, 2)), ST_SIMPLIFY(g, 5) FROM t"),
    ("bigquery", "SELECT APPROX_QUANTILES(x, 4), APPROX_TOP_COUNT(x, 3) FROM t"),
    ("bigquery", "SELECT SAFE.ST_AREA(g), SAFE.PARSE_DATE('%Y%m%d', s) FROM t"),
    ("bigquery", "SELECT NET.HOST(u), NET.REG_DOMAIN(u), NET.IP_FROM_STRING(u) FROM t"),
    ("bigquery", "SELECT CONTAINS_SUBSTR(s, 'x'), EDIT_DISTANCE(s, 'x'), GENERATE_UUID() FROM t"),
    ("bigquery", "SELECT RANGE_BUCKET(x, [0, 10, 20]), JUSTIFY_DAYS(i) FROM t"),
    ("snowflake", "SELECT H3_LATLNG_TO_CELL(a, b, 7), ST_AREA(g), ST_BUFFER(g, 1) FROM t"),
    ("snowflake", "SELECT JAROWINKLER_SIMILARITY(a, b), EDITDISTANCE(a, b), KURTOSIS(x) FROM t"),
    ("snowflake", "SELECT APPROX_PERCENTILE(x, 0.5), HASH_AGG(x), BOOLXOR_AGG(b) FROM t"),
    ("trino", "SELECT ST_CONVEXHULL(g), ST_AREA(g), BING_TILE_AT(a, b, 10) FROM t"),
    ("trino", "SELECT WILSON_INTERVAL_LOWER(a, b, 1.96), LEVENSHTEIN_DISTANCE(a, b) FROM t"),
    ("trino", "SELECT TDIGEST_AGG(x), HUMAN_READABLE_SECONDS(s) FROM t"),
    ("spark", "SELECT KLL_SKETCH_AGG_BIGINT(x), HLL_SKETCH_AGG(x), CURRENT_CATALOG() FROM t"),
    ("spark", "SELECT BITMAP_COUNT(b), RANDSTR(5), TRY_PARSE_URL(u, 'HOST') FROM t"),
    ("databricks", "SELECT H3_LONGLATASH3(a, b, 7), LUHN_CHECK(s) FROM t"),
    ("clickhouse", "SELECT quantileTDigestWeighted(0.5)(x, w), groupBitmap(u) FROM t"),
    ("clickhouse", "SELECT uniqThetaIf(u, x > 0), quantileTDigestIf(0.9)(x, x > 0) FROM t"),
    ("clickhouse", "SELECT geoDistance(a, b, c, d), h3ToParent(h, 5), arrayShuffle(xs) FROM t"),
    ("clickhouse", "SELECT currentUser(), currentDatabase(), throwIf(x > 1e9) FROM t"),
    ("redshift", "SELECT ST_DISTANCESPHERE(a, b), HLL_CARDINALITY(h), FNV_HASH(s) FROM t"),
    ("redshift", "SELECT MURMUR3_32_HASH(s), JSON_SERIALIZE(j), H3_FROMLONGLAT(a, b, 5) FROM t"),
    ("tsql", "SELECT EOMONTH(d), DATEFROMPARTS(y, m, 1), STRING_ESCAPE(s, 'json') FROM t"),
    ("tsql", "SELECT IIF(x > 0, 1, 0), CHOOSE(2, 'a', 'b'), SOUNDEX(s), DIFFERENCE(a, b) FROM t"),
    ("tsql", "SELECT DATE_BUCKET(week, 1, d), BASE64_ENCODE(b), SQUARE(x) FROM t"),
]


@pytest.mark.parametrize(("dialect", "sql"), DOCUMENTED_CALLS)
def test_documented_functions_pass(dialect: str, sql: str) -> None:
    guard(sql, dialect)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT HLL_COUNT.MERGE(sketch) FROM t",
        "SELECT KEYS.NEW_KEYSET('AEAD_AES_GCM_256') FROM t",
        "SELECT AEAD.ENCRYPT(k, s, 'x') FROM t",
        "SELECT KLL_QUANTILES.EXTRACT_INT64(sketch, 4) FROM t",
    ],
)
def test_bigquery_dotted_functions(sql: str) -> None:
    """sqlglot reads ``HLL_COUNT.MERGE(…)`` as a call behind an object prefix: the family's
    list is asked for the dotted name before the prefix rule refuses it."""
    guard(sql, "bigquery")


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [
        ("bigquery", "SELECT KEYS.KEYSET_CHAIN('kms', b'k') FROM t"),  # reaches Cloud KMS
        ("bigquery", "SELECT myproject.mydataset.udf(x) FROM t"),
        ("bigquery", "SELECT foo.merge(x) FROM t"),
        ("snowflake", "SELECT hll_count.merge(x) FROM t"),
    ],
)
def test_other_dotted_calls_stay_refused(dialect: str, sql: str) -> None:
    with pytest.raises(UnsafeQueryError) as info:
        guard(sql, dialect)
    assert info.value.rule == "forbidden_function"


# -- dangerous ones stay refused -----------------------------------------------------------------

DANGEROUS_CALLS = [
    ("bigquery", "SELECT EXTERNAL_QUERY('conn', 'SELECT 1') FROM t", "remote call"),
    ("bigquery", "SELECT AI.GENERATE('x') FROM t", "remote call"),
    ("bigquery", "SELECT ST_REGIONSTATS(g, 'ee://x') FROM t", "not a documented"),
    ("bigquery", "SELECT DLP_KEY_CHAIN('k', b'x') FROM t", "not a documented"),
    ("snowflake", "SELECT SYSTEM$WAIT(10) FROM t", "side effects"),
    ("snowflake", "SELECT GET_DDL('table', 't') FROM t", "not a documented"),
    ("snowflake", "SELECT GETVARIABLE('x') FROM t", "not a documented"),
    ("snowflake", "SELECT AI_COMPLETE('m', s) FROM t", "remote call"),
    ("trino", "SELECT random_string('x') FROM t", "not a documented"),
    ("spark", "SELECT reflect('java.lang.System', 'getenv', 'HOME') FROM t", "side effects"),
    ("spark", "SELECT try_reflect('java.lang.System', 'getenv', 'HOME') FROM t", "documented"),
    ("spark", "SELECT input_file_name() FROM t", ""),
    ("spark", "SELECT python_worker_logs() FROM t", "not a documented"),
    ("databricks", "SELECT ai_query('model', s) FROM t", "remote call"),
    ("databricks", "SELECT http_request('GET', 'http://x') FROM t", "files"),
    ("clickhouse", "SELECT file('/etc/passwd') FROM t", "files"),
    ("clickhouse", "SELECT getSetting('max_memory_usage') FROM t", "not a documented"),
    ("clickhouse", "SELECT dictGet('d', 'a', 1) FROM t", "not a documented"),
    ("clickhouse", "SELECT joinGet('j', 'v', 1) FROM t", "not a documented"),
    ("clickhouse", "SELECT hostName(), getServerPort('tcp_port') FROM t", "not a documented"),
    ("clickhouse", "SELECT sleepEachRow(1) FROM t", "side effects"),
    ("clickhouse", "SELECT aiGenerate('x') FROM t", "not a documented"),
    ("redshift", "SELECT change_query_priority(1, 'high') FROM t", "not a documented"),
    ("redshift", "SELECT pg_last_query_id() FROM t", "side effects"),
    ("redshift", "SELECT has_table_privilege('t', 'select') FROM t", "catalog"),
    ("tsql", "SELECT OBJECT_DEFINITION(1) FROM t", "not a documented"),
    ("tsql", "SELECT SERVERPROPERTY('MachineName') FROM t", "not a documented"),
    ("tsql", "SELECT SESSION_CONTEXT(N'k') FROM t", "not a documented"),
]


@pytest.mark.parametrize(("dialect", "sql", "why"), DANGEROUS_CALLS)
def test_dangerous_functions_stay_refused_and_the_refusal_says_why(
    dialect: str, sql: str, why: str
) -> None:
    error = refusal(sql, dialect)
    assert error.rule in ("forbidden_function", "file_access"), error
    assert why in str(error), str(error)


def test_an_unknown_function_is_named_with_its_engine_and_a_close_documented_name() -> None:
    error = refusal("SELECT ST_CONVEXHUL(g) FROM t", "bigquery")
    assert str(error).endswith(
        "st_convexhul() is not a documented BigQuery function (a UDF or remote function may "
        "send rows elsewhere); use a built-in function — did you mean st_convexhull()?"
    )
    assert "did you mean" not in str(refusal("SELECT my_udf(x) FROM t", "snowflake"))
    oracle = str(refusal("SELECT my_udf(x) FROM t", "oracle"))
    assert "no list of Oracle's documented functions" in oracle


def test_a_refused_family_name_says_which_rule() -> None:
    assert "reads or writes files" in str(
        refusal("SELECT file('/etc/passwd') FROM t", "clickhouse")
    )
    assert "catalog" in str(refusal("SELECT has_table_privilege('t', 's') FROM t", "redshift"))
    assert "remote call" in str(refusal("SELECT ai_query('m', s) FROM t", "databricks"))
    assert "side effects" in str(refusal("SELECT sleepEachRow(1) FROM t", "clickhouse"))


# -- speed ---------------------------------------------------------------------------------------


def test_the_lists_are_read_once() -> None:
    assert documented_functions("bigquery") is documented_functions("bigquery")
    started = time.perf_counter()
    for _ in range(200):
        guard("SELECT ST_CONVEXHULL(g), NET.HOST(u) FROM t", "bigquery")
    per_query = (time.perf_counter() - started) / 200
    assert per_query < 0.005, f"{per_query * 1e3:.2f} ms a query"
