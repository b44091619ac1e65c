"""Catalog lookups around the allowlist, as data: the casts and functions that resolve a name
or an OID through the database catalog, and so reach tables no ``FROM`` names.

Why a list of its own: the allowlist is checked on table *references*, but PostgreSQL also
resolves names and OIDs inside expressions. ``'secrets'::regclass``, ``regtype('secrets')``,
``obj_description(16429, 'pg_class')`` or ``has_type_privilege('secrets', 'USAGE')`` read a
hidden table's comment, or confirm it exists, without a table reference the guard could check.
A string passed to a parameter of type ``regclass`` is cast implicitly, and a bare number
reaches any ``oid`` parameter, so the functions are refused by name and the casts by type,
whatever their argument (a computed OID enumerates the catalog as well as a literal does).

How :data:`CATALOG_FUNCTIONS` was produced (PostgreSQL 15.18): every function in ``pg_proc``
of a database holding every *trusted* extension the server ships (the ones a database owner
may create without being superuser) that has a callable overload (no ``internal`` argument)
taking or returning ``oid`` or an OID alias type (the types binary-coercible from ``oid`` by
an implicit cast: ``regclass``, ``regtype`` … ``regcollation``), minus ``pg_*`` names (refused
by prefix); plus the alias types' own names, which PostgreSQL accepts as function-style
casts (``regnamespace('internal')``). Each name was then reviewed: those that look the OID or
name up in the catalog are :data:`CATALOG_FUNCTIONS`; those that only compute with the value
(OID comparisons and hashes, type input functions that ignore their type argument) or that
resolve text-search configurations and dictionaries only (``to_tsvector('english', …)``) are
:data:`VALUE_FUNCTIONS`. ``tests/connectors/test_guard_catalog.py`` re-derives the list from
the live test server and fails on any function in neither set, so a new server version or
extension cannot add a lookup silently.

:data:`EXTENSION_CATALOG_FUNCTIONS` comes from the scripts of the *untrusted* contrib
extensions the server ships (amcheck, pageinspect, pgstattuple, pgrowlocks, pg_surgery, xml2,
the FDW validators): only a superuser can install them, so they are not in the derived list,
but once an administrator has, they take a relation as ``regclass`` or as text.
"""

from __future__ import annotations

__all__ = [
    "CATALOG_FUNCTIONS",
    "CATALOG_TYPES",
    "EXTENSION_CATALOG_FUNCTIONS",
    "TEXT_SEARCH_TYPES",
    "VALUE_FUNCTIONS",
]

CATALOG_TYPES: frozenset[str] = frozenset(
    {
        "regclass", "regtype", "regproc", "regprocedure", "regoper", "regoperator",
        "regnamespace", "regrole", "regcollation",
    }
)  # fmt: skip
"""OID alias types that name tables, types (every table has a row type), schemas, roles,
functions, operators or collations: a cast to one looks the name up, and the value prints as
the object's name (``16429::regclass`` is ``secrets``). Refused in casts and as function-style
casts. ``oid`` itself is a number and stays allowed."""

TEXT_SEARCH_TYPES: frozenset[str] = frozenset({"regconfig", "regdictionary"})
"""OID alias types that resolve text-search configurations and dictionaries only, never a
table: ``to_tsvector('english'::regconfig, body)`` is analytics."""

_TYPE_IO = ("in", "out", "send")

CATALOG_FUNCTIONS: frozenset[str] = frozenset(
    {
        # comments, type names, privileges, row security: the catalog, by OID or by name
        "obj_description", "col_description", "shobj_description", "format_type",
        "row_security_active", "has_any_column_privilege", "has_column_privilege",
        "has_database_privilege", "has_foreign_data_wrapper_privilege",
        "has_function_privilege", "has_language_privilege", "has_parameter_privilege",
        "has_schema_privilege", "has_sequence_privilege", "has_server_privilege",
        "has_table_privilege", "has_tablespace_privilege", "has_type_privilege",
        "acldefault", "makeaclitem", "amvalidate", "btequalimage", "btvarstrequalimage",
        "satisfies_hash_partition",
        # names to OIDs and back
        "to_regclass", "to_regcollation", "to_regnamespace", "to_regoper", "to_regoperator",
        "to_regproc", "to_regprocedure", "to_regrole", "to_regtype",
        *CATALOG_TYPES,
        *(f"{t}{io}" for t in CATALOG_TYPES for io in _TYPE_IO),
        # type input functions that resolve their type argument (a table's row type included)
        "record_in", "array_in", "domain_in", "enum_in", "range_in", "multirange_in",
        "anyrange_in", "anymultirange_in", "anycompatiblerange_in",
        "anycompatiblemultirange_in",
        # relations by regclass: sequences, index maintenance, a whole table as XML
        "currval", "nextval", "setval", "brin_summarize_new_values", "brin_summarize_range",
        "brin_desummarize_range", "gin_clean_pending_list", "table_to_xml",
        "table_to_xmlschema", "table_to_xml_and_xmlschema",
        # information_schema's helpers (a qualified call is refused anyway; these hold for a
        # search path that includes that schema)
        "_pg_char_max_length", "_pg_char_octet_length", "_pg_datetime_precision",
        "_pg_index_position", "_pg_interval_type", "_pg_numeric_precision",
        "_pg_numeric_precision_radix", "_pg_numeric_scale", "_pg_truetypid",
        # functions by OID: validators, and pg_upgrade's hooks
        "fmgr_c_validator", "fmgr_internal_validator", "fmgr_sql_validator",
        "plpgsql_validator", "postgresql_fdw_validator",
        "binary_upgrade_set_missing_value", "binary_upgrade_set_next_array_pg_type_oid",
        "binary_upgrade_set_next_heap_pg_class_oid", "binary_upgrade_set_next_heap_relfilenode",
        "binary_upgrade_set_next_index_pg_class_oid",
        "binary_upgrade_set_next_index_relfilenode",
        "binary_upgrade_set_next_multirange_array_pg_type_oid",
        "binary_upgrade_set_next_multirange_pg_type_oid", "binary_upgrade_set_next_pg_authid_oid",
        "binary_upgrade_set_next_pg_enum_oid", "binary_upgrade_set_next_pg_tablespace_oid",
        "binary_upgrade_set_next_pg_type_oid", "binary_upgrade_set_next_toast_pg_class_oid",
        "binary_upgrade_set_next_toast_relfilenode",
    }
)  # fmt: skip
"""Refused in every family (``forbidden_function``): they resolve an OID or a name in the
catalog. DuckDB implements several as PostgreSQL-compatible macros (``format_type`` reads its
type catalog); the shared denylists are unioned across dialects anyway."""

VALUE_FUNCTIONS: frozenset[str] = frozenset(
    {
        # OIDs as numbers: comparisons, hashes, conversions, aggregates
        "oid", "int8", "oideq", "oidne", "oidlt", "oidle", "oidgt", "oidge", "oidlarger",
        "oidsmaller", "btoidcmp", "hashoid", "hashoidextended", "oidin", "oidout", "oidsend",
        "oid_dist", "nameconcatoid", "max", "min",
        # type input functions that ignore their type-OID argument (only the typmod counts)
        "bit_in", "bpcharin", "interval_in", "numeric_in", "time_in", "timestamp_in",
        "timestamptz_in", "timetz_in", "varbit_in", "varcharin",
        # text search: configurations, dictionaries and parsers, never tables
        "to_tsvector", "to_tsquery", "plainto_tsquery", "phraseto_tsquery",
        "websearch_to_tsquery", "ts_headline", "ts_debug", "ts_lexize", "ts_parse",
        "ts_token_type", "json_to_tsvector", "jsonb_to_tsvector", "get_current_ts_config",
        "unaccent", *TEXT_SEARCH_TYPES,
        *(f"{t}{io}" for t in TEXT_SEARCH_TYPES for io in _TYPE_IO),
    }
)  # fmt: skip
"""In the derived list, reviewed and allowed: they compute with the value they are given."""

EXTENSION_CATALOG_FUNCTIONS: frozenset[str] = frozenset(
    {
        # amcheck, pg_surgery: checks and repairs of a relation named by regclass
        "bt_index_check", "bt_index_parent_check", "verify_heapam", "heap_force_freeze",
        "heap_force_kill",
        # pageinspect: raw pages and tuples of a relation named as text or regclass
        "get_raw_page", "bt_metap", "bt_page_stats", "bt_page_items", "brin_page_items",
        "gist_page_items", "hash_bitmap_info", "heap_page_item_attrs", "tuple_data_split",
        # pgstattuple, pgrowlocks: sizes, tuple counts and row locks of a relation by name
        "pgstattuple", "pgstattuple_approx", "pgstatindex", "pgstatginindex",
        "pgstathashindex", "pgrowlocks",
        # xml2: runs SELECT over the relation named in its third argument
        "xpath_table",
        # foreign-data wrapper validators (catalog OID arguments)
        "file_fdw_validator", "dblink_fdw_validator", "postgres_fdw_validator",
    }
)  # fmt: skip
"""Refused like :data:`CATALOG_FUNCTIONS`; ``pg_*`` ones (``pg_relpages``,
``pg_visibility``, ``pg_prewarm`` …) are already refused by prefix."""
