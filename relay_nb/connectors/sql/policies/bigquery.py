"""BigQuery: plain reads only until the warehouse corpus gives it a full policy.

``EXPORT DATA``, scripting (``DECLARE``, ``BEGIN … END``), ``EXTERNAL_QUERY`` and ``ML.*``
functions (called behind a prefix) are refused by the shared command, function and prefix
rules.
"""

from __future__ import annotations

from relay_nb.connectors.sql.policies.base import PlainReadPolicy

__all__ = ["BigQueryPolicy"]


class BigQueryPolicy(PlainReadPolicy):
    name = "bigquery"
    dialects = ("bigquery",)
