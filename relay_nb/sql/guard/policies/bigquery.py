"""BigQuery: plain reads, its functions, and its case-sensitive names.

Functions: those sqlglot knows and the ones BigQuery documents (:data:`_KNOWN`);
any other name may be a remote function (rows sent to a Cloud Function) or a UDF, and is
refused. Dataset and table names are case-sensitive in BigQuery (``analytics.Orders`` is not
``analytics.orders``), so they compare exactly, though its columns do not.

``EXPORT DATA``, scripting (``DECLARE``, ``BEGIN … END``), ``EXTERNAL_QUERY`` and ``ML.*``
functions (called behind a prefix) are refused by the shared command, function and prefix
rules.
"""

from __future__ import annotations

from relay_nb.sql.guard.functions import documented_functions
from relay_nb.sql.guard.policies.base import PlainReadPolicy

__all__ = ["BigQueryPolicy"]

_DOCUMENTED = documented_functions("bigquery")
_KNOWN = (
    _DOCUMENTED
    # sqlglot reads NET.HOST(…) as a wrapper around HOST(…), and the guard checks the inner
    # call by its own name
    | {name.removeprefix("net.") for name in _DOCUMENTED if name.startswith("net.")}
    # the array subscripts arr[OFFSET(0)], arr[SAFE_ORDINAL(1)]: documented as operators
    | {"offset", "ordinal", "safe_offset", "safe_ordinal"}
)
"""BigQuery's documented functions (:mod:`relay_nb.sql.guard.functions`, ``bigquery.txt``)."""


class BigQueryPolicy(PlainReadPolicy):
    name = "bigquery"
    dialects = ("bigquery",)
    known_functions = _KNOWN
    case_sensitive_tables = True
    wildcard_tables = True
