"""BigQuery: plain reads, its functions, and its case-sensitive names.

Functions: those sqlglot knows and BigQuery's own plain ones it does not (:data:`_KNOWN`);
any other name may be a remote function (rows sent to a Cloud Function) or a UDF, and is
refused. Dataset and table names are case-sensitive in BigQuery (``analytics.Orders`` is not
``analytics.orders``), so they compare exactly, though its columns do not.

``EXPORT DATA``, scripting (``DECLARE``, ``BEGIN … END``), ``EXTERNAL_QUERY`` and ``ML.*``
functions (called behind a prefix) are refused by the shared command, function and prefix
rules.
"""

from __future__ import annotations

from relay_nb.sql.guard.policies.base import PlainReadPolicy

__all__ = ["BigQueryPolicy"]

_KNOWN = frozenset(
    {
        "array_includes", "date_bucket", "datetime_bucket", "ieee_divide", "iff", "offset",
        "ordinal", "range", "safe_offset", "safe_ordinal", "st_astext", "st_dwithin",
        "st_geogpoint", "st_x", "st_y", "timestamp_bucket"
    }
)  # fmt: skip


class BigQueryPolicy(PlainReadPolicy):
    name = "bigquery"
    dialects = ("bigquery",)
    known_functions = _KNOWN
    case_sensitive_tables = True
    wildcard_tables = True
