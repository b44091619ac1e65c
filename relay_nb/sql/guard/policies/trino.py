"""Trino, Presto and Athena: plain reads and their functions.

Functions: those sqlglot knows and Trino's own plain ones it does not (:data:`_KNOWN`); any
other name may be a connector's function or a user's, and is refused.
``TABLE(system.query(…))`` pass-through queries are refused as prefixed table functions;
``system.*`` tables are outside any allowlist.
"""

from __future__ import annotations

from relay_nb.sql.guard.policies.base import PlainReadPolicy

__all__ = ["TrinoPolicy"]

_KNOWN = frozenset(
    {
        "approx_most_frequent", "approx_set", "array_union", "arrays_overlap", "at_timezone",
        "bing_tile", "checksum", "codepoint", "cosine_similarity", "crc32", "every",
        "format_datetime", "geometric_mean", "great_circle_distance", "hamming_distance",
        "histogram", "human_readable_seconds", "json_array_get", "json_array_length",
        "json_exists", "json_size", "luhn_check", "map_agg", "map_entries", "map_filter",
        "map_values", "merge", "multimap_agg", "numeric_histogram", "parse_duration",
        "regexp_position", "to_iso8601", "to_milliseconds", "transform_keys",
        "transform_values", "url_decode", "url_encode", "url_extract_host",
        "url_extract_parameter", "url_extract_path", "with_timezone", "word_stem", "xxhash64",
        "zip", "zip_with"
    }
)  # fmt: skip


class TrinoPolicy(PlainReadPolicy):
    name = "trino"
    dialects = ("trino", "presto", "athena")
    known_functions = _KNOWN
