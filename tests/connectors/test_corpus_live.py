"""Both corpora through the real ``query_<id>`` tool on real seeded databases, connected as
the data's owner (a role that may write), so only relay_nb's own defences stand in the way.

Adversarial: every payload is refused with its rule, and a fingerprint of every table, the
catalog, roles, server settings and the file system around the database (its directory and
the temp directory) is identical before and after each payload. Benign: every query runs and
returns what the original SQL returns when run directly by the owner.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import re
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.testing.fingerprint import fingerprint_parts
from relay_nb.testing.seed import ALLOWED_TABLES

CORPUS = Path(__file__).with_name("corpus")
ROW_LIMIT = 200


def _entries(name: str, dialect: str) -> list[dict[str, Any]]:
    entries = yaml.safe_load((CORPUS / name).read_text())
    return [e for e in entries if e["dialects"] == "all" or dialect in e["dialects"]]


def test_corpora_are_large_enough():
    """The issue's floor: 150 adversarial payloads and 100 benign queries across dialects."""
    assert len(yaml.safe_load((CORPUS / "adversarial.yaml").read_text())) >= 150
    assert len(yaml.safe_load((CORPUS / "benign.yaml").read_text())) >= 100


@pytest.fixture
def connector(shop_db):
    shop = SQLConnector(
        "shop",
        shop_db.admin_url,  # the data's owner: only relay_nb's defences stand in the way
        tables=list(ALLOWED_TABLES),
        row_limit=ROW_LIMIT,
        statement_timeout_s=10,
    )
    yield shop
    shop.close()


@pytest.mark.slow  # every payload on three live engines: ~40 s
async def test_adversarial_payloads_are_refused_and_change_nothing(shop_db, connector):
    (tool,) = [t for t in connector.tools() if t.name == "query_shop"]
    entries = _entries("adversarial.yaml", shop_db.dialect)
    entries += _entries("value_sizes.yaml", shop_db.dialect)
    assert len(entries) >= 60

    targets = {name for e in entries for name in re.findall(r"/tmp/([\w.-]+)", e["sql"])}

    def snapshot() -> dict[str, str]:
        parts = fingerprint_parts(shop_db.admin_url, paths=shop_db.paths)
        parts["tmp-files"] = _temp_files(targets)
        return parts

    before = snapshot()
    problems: list[str] = []
    for entry in entries:
        result = await tool.run({"sql": entry["sql"]})
        if not result.is_error:
            problems.append(f"{entry['id']}: ran ({result.content[:80]!r})")
        elif result.rule != entry["rule"]:
            problems.append(f"{entry['id']}: expected {entry['rule']}, got {result.content[:80]!r}")
        after = snapshot()
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        if changed:
            problems.append(f"{entry['id']}: changed {changed}")
            before = after
    assert not problems, "\n".join(problems)


def _temp_files(targets: set[str]) -> str:
    """What file-writing payloads (``INTO OUTFILE``, ``COPY … TO``, ``ATTACH``, ``VACUUM
    INTO``) could leave directly in the temp directory: the files a payload names
    (``/tmp/x.db``), with size and mtime, which one could create or overwrite; and every file
    a database server wrote there (owned by its user, not this process's), whatever its name.

    Other files of this user are left out: the tests' own processes and anything else
    running meanwhile write there, and an in-process engine (DuckDB, SQLite) can only write
    where the statement names, which the targets cover.
    """
    root = Path(tempfile.gettempdir())
    me = os.getuid()
    entries = []
    for path in sorted(root.iterdir()):
        with contextlib.suppress(OSError):
            if not path.is_file() or path.is_symlink():
                continue
            stat = path.stat()
            if path.name in targets:
                entries.append(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}")
            elif stat.st_uid != me:
                entries.append(f"{path.name} (owner {stat.st_uid})")
    return "\n".join(entries)


def _normalise(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, dt.timedelta):  # pandas Timedelta is a subclass
        return round(value.total_seconds(), 3)
    if isinstance(value, (float, Decimal)):
        return round(float(value), 4)
    if hasattr(value, "isoformat"):  # dates and midnight timestamps compare as dates
        text = str(value.isoformat()).replace("T", " ")[:19]
        return text.removesuffix(" 00:00:00")
    return str(value)


def _rows(frame) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple(_normalise(v) for v in row) for row in frame.itertuples(index=False)),
        key=repr,
    )


async def test_benign_queries_run_and_mean_what_they_said(shop_db, connector):
    (tool,) = [t for t in connector.tools() if t.name == "query_shop"]
    entries = _entries("benign.yaml", shop_db.dialect)
    assert len(entries) >= 50
    problems: list[str] = []
    # the same engine, without the guard: DuckDB refuses a second differently-configured
    # connection to one file, and the raw cursor skips any driver-side parameter parsing
    raw = connector.engine.raw_connection()
    try:
        for entry in entries:
            result = await tool.run({"sql": entry["sql"]})
            if result.is_error:
                problems.append(f"{entry['id']}: refused or failed: {result.content[:120]}")
                continue
            cursor = raw.cursor()
            try:
                cursor.execute(entry["sql"])
                direct = cursor.fetchall()
            finally:
                cursor.close()
                with contextlib.suppress(Exception):  # DuckDB: no transaction to roll back
                    raw.rollback()
            got = result.artifact
            if len(direct) > ROW_LIMIT:
                if not (got.truncated and got.row_count == ROW_LIMIT):
                    problems.append(f"{entry['id']}: {len(direct)} rows direct, not truncated")
                continue
            expected = sorted((tuple(_normalise(v) for v in row) for row in direct), key=repr)
            if _rows(got.df) != expected:
                problems.append(f"{entry['id']}: results differ from the direct run")
    finally:
        raw.close()
    assert not problems, "\n".join(problems)
