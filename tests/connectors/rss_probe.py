"""Run one query in a fresh process and report how much the process's peak memory grew.

``python rss_probe.py raw|relay URL SQL [MAX_RESULT_BYTES]`` prints one JSON line: the peak
RSS growth in MiB while the query ran (:class:`relay_nb.testing.memory.PeakGrowth`, after
imports and a warm-up query, so only the query counts), and what came back. ``raw`` reads
the whole result through the driver, as ``pandas.read_sql`` would; ``relay`` runs it through
the SQL connector with the seeded allowlist.
"""

from __future__ import annotations

import json
import sys
import time

from relay_nb.testing.memory import PeakGrowth


def main() -> None:
    mode, url, sql = sys.argv[1], sys.argv[2], sys.argv[3]
    limit = int(sys.argv[4]) if len(sys.argv) > 4 else 16 << 20
    import sqlalchemy

    from relay_nb.connectors.sql.connector import SQLConnector
    from relay_nb.testing.seed import ALLOWED_TABLES

    report: dict[str, object] = {"mode": mode}
    if mode == "raw":
        engine = sqlalchemy.create_engine(url)
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1").fetchall()
        started = time.perf_counter()
        with PeakGrowth() as growth, engine.connect() as conn:
            rows = conn.exec_driver_sql(sql).fetchall()
        report["rows"] = len(rows)
        report["bytes"] = sum(len(v) for row in rows for v in row if isinstance(v, str | bytes))
        del rows
    else:
        shop = SQLConnector("shop", url, tables=list(ALLOWED_TABLES), max_result_bytes=limit)
        shop.query("SELECT COUNT(*) FROM orders")  # the catalog, pandas, the pool: warm
        started = time.perf_counter()
        try:
            with PeakGrowth() as growth:
                result = shop.query(sql)
        except Exception as exc:
            report["error"] = f"{type(exc).__name__}: {exc}"
        else:
            report.update(
                rows=result.row_count,
                truncated=result.truncated,
                limit=result.limit,
                notes=list(result.notes),
            )
        report["canary"] = int(shop.query("SELECT COUNT(*) AS n FROM orders").df.iloc[0, 0])
    report["growth_mb"] = growth.mib
    report["seconds"] = round(time.perf_counter() - started, 2)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
