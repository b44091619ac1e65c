"""Run one query in a fresh process and report how much the process's peak memory grew.

``python rss_probe.py raw|relay URL SQL [MAX_RESULT_BYTES]`` prints one JSON line: the peak
RSS growth in MB while the query ran (the peak after minus the resident size before; the
peak is reset after imports and a warm-up query, so only the query counts), and what came
back. ``raw`` reads the whole result through the driver, as ``pandas.read_sql`` would;
``relay`` runs it through the SQL connector with the seeded allowlist. A fresh process is the
only place a peak is clean: the test process has held far more than any one query by then.
"""

from __future__ import annotations

import json
import resource
import sys
import time


def _status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _reset_peak() -> float:
    """Start measuring a peak from now; returns the baseline (MB).

    Linux resets the peak RSS (VmHWM) when ``5`` is written to ``/proc/self/clear_refs``;
    without that, the process's lifetime peak (which the imports may have set) is the
    baseline, and growth is under-counted, never over-counted.
    """
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        current = _status_mb("VmRSS")
        if current is not None:
            return current
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _peak_mb() -> float:
    peak = _status_mb("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
        before, started = _reset_peak(), time.perf_counter()
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(sql).fetchall()
        report["rows"] = len(rows)
        report["bytes"] = sum(len(v) for row in rows for v in row if isinstance(v, str | bytes))
        del rows
    else:
        shop = SQLConnector("shop", url, tables=list(ALLOWED_TABLES), max_result_bytes=limit)
        shop.query("SELECT COUNT(*) FROM orders")  # the catalog, pandas, the pool: warm
        before, started = _reset_peak(), time.perf_counter()
        try:
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
    report["growth_mb"] = round(_peak_mb() - before, 1)
    report["seconds"] = round(time.perf_counter() - started, 2)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
