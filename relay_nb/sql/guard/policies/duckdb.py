"""DuckDB: an analytical database in the kernel's process (also behind the DataFrame
connector).

Its own: ``json_each`` / ``json_tree`` in ``FROM`` and ``FROM``-first queries. Everything that
reads files or the network (``read_csv``, ``'x.parquet'`` as a table, ``httpfs``) is refused
by the shared file rules, and engines that allow external access are refused outright.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from relay_nb.sql.guard import rules as shared
from relay_nb.sql.guard.policies.base import GuardPolicy
from relay_nb.sql.guard.sizes import SizeLimits, SizeRule, bound_value_sizes, size_table

__all__ = ["DuckDBPolicy"]


class DuckDBPolicy(GuardPolicy):
    name = "duckdb"
    dialects = ("duckdb",)
    table_functions = shared.COMMON_TABLE_FUNCTIONS | frozenset({"json_each", "json_tree"})
    leading_keywords = shared.ALLOWED_LEADING_KEYWORDS | frozenset({"PIVOT", "UNPIVOT"})
    embedded = True
    rules = (*GuardPolicy.rules, ("tree", bound_value_sizes))

    size_limits: ClassVar[SizeLimits] = SizeLimits()
    """The bounds of the value-size rule (defaults: 64 KiB and 64 copies per value, 256 KiB
    and 1024 copies per row, counts clamped to 16 KiB)."""
    size_functions: ClassVar[Mapping[str, SizeRule]] = size_table(
        {
            # -- sized by a number: the amplifiers (("series", 1): the end is inclusive) ----
            ("repeat",): "repeat",
            ("pad",): "lpad rpad pad",
            ("series", 0): "range",
            ("series", 1): "generate_series",
            ("resize",): "list_resize array_resize",
            ("bins",): "equi_width_bins",
            ("bits",): "bitstring",
            # -- sized by a pattern ---------------------------------------------------------
            ("replace",): "replace",
            ("regexp_replace",): "regexp_replace",
            ("printf",): "printf",
            ("fmt",): "format",
            ("strftime",): "strftime time_to_str unix_to_str",
            # -- a constant factor of the first argument (of all of them: ("scale", f, 1)) --
            ("scale", 2): (
                "hex to_hex lower_hex upper ucase lower lcase regexp_escape to_base64 base64 "
                "bitstring_byte_comparable map_entries list_histogram parse_duckdb_log_message "
                "st_asbinary st_aswkb st_geomfromwkb st_geomfromgeojson variant_bytes_to_variant "
                "variant_comparator variant_to_parquet_variant "
                "__internal_decompress_geometry_point"
            ),
            ("scale", 2, 1): "create_sort_key",
            ("scale", 3): "url_encode nfc_normalize",
            ("scale", 3, 1): "hive_partition_component",
            ("scale", 4): "translate m_l_translate st_astext st_aswkt",
            ("scale", 6): "json_normalize st_asgeojson",
            ("scale", 8): "bin to_binary icu_sort_key json_structure",
            ("scale", 24): "array_grade_up list_grade_up grade_up generate_subscripts",
            ("scale", 256): "json_serialize_sql json_serialize_plan",
            ("json",): (
                "to_json json_quote json_array json_object row_to_json array_to_json "
                "j_s_o_n_array j_s_o_n_object"
            ),
            ("json_transform",): "from_json from_json_strict json_transform json_transform_strict",
            ("json_pretty",): "json_pretty",
            ("cast",): "__cast cast_to_type replace_type",
            # -- bounded by their inputs --------------------------------------------------------
            ("part",): (
                "left left_grapheme right right_grapheme substring substr substring_grapheme "
                "trim ltrim rtrim reverse split_part strip_accents parse_dirname parse_dirpath "
                "parse_filename decode encode from_base64 from_binary unbin from_hex unhex "
                "url_decode set_bit nullif constant_or_null write_log json parse_json json_parse "
                "json_copy_strftime_if_date json_copy_strftime_if_timestamp "
                "json_deserialize_sql json_remove json_strip_nulls jsonb_delete_at_path st_crs "
                "st_setcrs "
                "variant_extract variant_extract_string variant_normalize array_distinct "
                "list_distinct array_sort list_sort array_reverse_sort list_reverse_sort "
                "array_reverse list_reverse array_slice list_slice array_pop_back "
                "array_pop_front array_intersect list_intersect array_where list_where flatten "
                "element_at map_extract map_extract_value map_keys map_values map_from_entries "
                "struct_extract struct_extract_at struct_values union_extract union_tag "
                "any_value arbitrary first last median mode bit_and bit_or bit_xor list_bit_and "
                "list_bit_or list_bit_xor bitwise_and_agg bitwise_or_agg bitwise_xor_agg "
                # window functions: duckdb_functions() does not list them
                "first_value last_value nth_value"
            ),
            ("unnest",): (
                "array_extract list_extract list_element list_any_value list_first list_last "
                "list_max list_min list_mode list_median array_max array_min"
            ),
            ("widest",): "& << >> xor | ~ greatest least if switch sum lag lead",
            ("sum",): (
                "+ add - subtract combine to_aggregate_state index_key map struct_pack row "
                "struct_concat struct_insert struct_update union_value remap_struct map_concat "
                "json_deep_merge json_merge_patch json_merge_patch_diff json_insert json_replace "
                "json_set overlay date_part datepart"
            ),
            ("concat",): "concat || path_join",
            ("concat_ws",): "concat_ws",
            ("list",): "array_value list_value list_pack unpivot_list",
            ("concat_lists",): (
                "array_cat array_concat list_cat list_concat array_append array_push_back "
                "list_append array_prepend array_push_front list_prepend"
            ),
            ("zip",): "array_zip list_zip",
            ("split",): (
                "string_split str_split split string_to_array string_split_regex "
                "str_split_regex regexp_split regexp_split_to_array regexp_split_to_table "
                "regexp_extract_all parse_path json_keys struct_keys variant_keys"
            ),
            # (source argument, or -1 for a fixed-width result; the argument that may be a list)
            ("per_item", 0, 1): (
                "json_extract json_extract_path json_extract_path_text json_extract_string "
                "json_value ->> json_extract_scalar jsonb_extract jsonb_extract_scalar"
            ),
            ("per_item", 0, 2): "regexp_extract",
            ("per_item", -1, 1): (
                "json_type json_exists json_array_length variant_type variant_exists "
                "variant_array_length"
            ),
            # (the separator argument; -1: none, a comma)
            ("join", 1): "array_to_string array_to_string_comma_default",
            ("join", -1): "list_string_agg",
            ("join_aggregate",): "list_aggregate list_aggr aggregate array_aggregate array_aggr",
            # -- lambdas --------------------------------------------------------------------------
            ("transform",): (
                "list_transform array_transform apply array_apply list_apply transform"
            ),
            ("filter",): "list_filter array_filter filter",
            ("reduce",): "list_reduce array_reduce reduce",
            ("invoke",): "invoke",
            ("select",): "list_select array_select",
            # -- text of a fixed size (bytes) -----------------------------------------------
            ("text", 20): "chr",
            ("text", 32): "dayname monthname",
            ("text", 48): "md5 format_bytes formatreadablesize formatreadabledecimalsize",
            ("text", 56): "sha1",
            ("text", 64): "version current_version array_cross_product pg_size_pretty",
            ("text", 96): "to_base",  # DuckDB caps min_length at 64
            ("text", 160): "sha256 sha2",
            ("text", 256): (
                "current_catalog current_database current_schema format_pg_type format_type"
            ),
            ("text", 1024): "current_schemas stats",
            ("text", 3016): "bar",  # DuckDB caps the width at 1000 characters of 3 bytes
            ("text", 4096): "current_setting getvariable",
            ("query_text",): "current_query alias",
            ("fixed",): (
                "ago assert_true date_add days_in_month fdiv geomean geometric_mean wavg "
                "weighted_avg map_to_pg_oid map_type_id_to_pg_oid get_block_size "
                "md5_number_lower md5_number_upper map_contains_entry map_contains_value "
                "pg_sleep enum_code list_approx_count_distinct list_avg list_bool_and "
                "list_bool_or list_count list_entropy list_kurtosis list_kurtosis_pop list_mad "
                "list_product list_sem list_skewness list_stddev_pop list_stddev_samp list_sum "
                "list_var_pop list_var_samp"
            ),
            # -- stored: collected by an operator (memory-limited) or read from the schema ----
            ("data",): (
                "array_agg list string_agg group_concat listagg histogram histogram_exact "
                "approx_top_k approx_quantile bitstring_agg lttb reservoir_quantile "
                "combine_aggr json_group_array json_group_object json_group_structure "
                "variant_group_array variant_group_object enum_first enum_last enum_range "
                "enum_range_boundary pg_get_constraintdef pg_get_expr pg_get_viewdef typeof "
                "pg_typeof vector_type variant_typeof"
            ),
            # (the argument count from which the aggregate collects n values: max(x, n))
            ("top", 1): "max min quantile quantile_disc percentile_disc",
            ("top", 2): (
                "arg_max arg_max_null arg_max_nulls_last arg_min arg_min_null "
                "arg_min_nulls_last argmax argmin max_by min_by"
            ),
        }
    )
    """How each function's output size follows from its arguments, for the value-size rule
    (:mod:`relay_nb.sql.guard.sizes`): DuckDB
    runs in the analyst's process, so the values a query builds are part of its policy.
    Derived from ``duckdb_functions()`` of DuckDB 2.0.1: every scalar, macro and aggregate
    whose result is not fixed-width, with its aliases and the names sqlglot parses them into.
    A function not listed returns a fixed-width value; ``test_guard_sizes_engine.py`` checks
    that against every function of the engine and every function sqlglot generates as one."""
    size_prefixes: ClassVar[Mapping[str, SizeRule]] = {
        "collate_": ("scale", 8),
        "icu_collate_": ("scale", 8),
    }
    """DuckDB's 190 collation functions (``COLLATE de`` sort keys), by prefix."""
