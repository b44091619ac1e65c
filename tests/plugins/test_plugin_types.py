"""ConnectorType: what a type may be called and claim, and registering one from a cell."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from plugin_support import Echo, echo_type
from pydantic import BaseModel

import relay_nb
from relay_nb import ConfigurationError
from relay_nb.connectors import plugins


def test_the_public_names_are_the_plugin_module_objects() -> None:
    assert relay_nb.ConnectorType is plugins.ConnectorType
    assert relay_nb.register_connector_type is plugins.register_connector_type
    assert relay_nb.unregister_connector_type is plugins.unregister_connector_type
    assert relay_nb.connector_types is plugins.connector_types
    assert relay_nb.ConnectorTypeInfo is plugins.ConnectorTypeInfo
    assert issubclass(relay_nb.ConnectorPluginWarning, UserWarning)


def test_the_reserved_names_are_the_config_file_types_and_the_python_only_kinds() -> None:
    assert {
        *("sql", "postgres", "postgresql", "mysql", "mariadb", "sqlite", "duckdb"),
        *("mongo", "mongodb", "http", "websearch", "web_search", "dataframe", "spark", "mcp"),
    } == plugins.BUILTIN_TYPE_NAMES
    assert {n for t in plugins.BUILTIN_TYPES for n in t.names} == plugins.BUILTIN_TYPE_NAMES


def test_the_built_ins_are_connector_types_listed_with_their_options() -> None:
    """One record per built-in kind, the plugins' own: name, spellings, schemes, options."""
    assert all(isinstance(t, relay_nb.ConnectorType) and t.builtin for t in plugins.BUILTIN_TYPES)
    assert plugins.builtin_type("postgres") is plugins.builtin_type("sql") is plugins.SQL_TYPE
    rows = {row.name: row for row in relay_nb.connector_types() if row.source == "built-in"}
    assert list(rows) == ["sql", "mongo", "http", "websearch", "dataframe", "spark", "mcp"]
    sql, http, frames = rows["sql"], rows["http"], rows["dataframe"]
    assert "postgres" in sql.aliases and "postgresql" in sql.url_schemes
    assert {"url", "tables", "tableAllowlist", "row_limit", "statement_timeout_s"} <= set(
        sql.options or ()
    )
    assert {"base_url", "auth", "openapi"} <= set(http.options or ()) and "https" in (
        http.url_schemes
    )
    assert frames.in_config is False and {"row_limit", "statement_timeout_s"} <= set(
        frames.options or ()
    )
    assert all(row.origin == "relay_nb" and row.description for row in rows.values())


def test_a_built_in_type_cannot_be_registered_again() -> None:
    with pytest.raises(ConfigurationError, match="'sql' is a built-in connector type"):
        relay_nb.register_connector_type(plugins.SQL_TYPE)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"name": "CSV"}, "must be lowercase"),
        ({"name": "9lives"}, "must be lowercase"),
        ({"name": "x" * 41}, "must be lowercase"),
        ({"factory": "Echo"}, "factory must be callable"),
        ({"config_model": dict}, "config_model must be a pydantic BaseModel class"),
        ({"url_schemes": ("bad scheme",)}, "'bad scheme' is not a URL scheme"),
        ({"aliases": ("echo2",)}, "aliases are for the built-in types"),
    ],
)
def test_a_broken_type_is_refused_when_made(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("+", r"\+")):
        echo_type(**overrides)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"name": "postgres"}, "'postgres' is a built-in connector type"),
        ({"name": "dataframe"}, "'dataframe' is a built-in connector type"),
        ({"url_schemes": ("https",)}, "the https:// scheme belongs to a built-in connector"),
        ({"url_schemes": ("postgresql+mydriver",)}, "postgresql+mydriver:// scheme belongs"),
        ({"url_schemes": ("mongodb+srv",)}, "mongodb+srv:// scheme belongs"),
        ({"name": "tavily"}, "'tavily' names a built-in web-search provider"),
        ({"name": "serper"}, "'serper' names a built-in web-search provider"),
        ({"url_schemes": ("snowflake",)}, "snowflake:// is a SQLAlchemy database URL"),
        ({"url_schemes": ("bigquery",)}, "bigquery:// is a SQLAlchemy database URL"),
        ({"url_schemes": ("trino+rest",)}, "trino+rest:// is a SQLAlchemy database URL"),
    ],
)
def test_a_type_that_would_change_a_built_ins_meaning_is_refused_when_registered(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("+", r"\+")):
        relay_nb.register_connector_type(echo_type(**overrides))
    assert plugins.find_connector_type(overrides.get("name", "echo")) is None


def test_schemes_are_normalised() -> None:
    assert echo_type(url_schemes=("Echo://",)).url_schemes == ("echo",)
    assert echo_type(url_schemes="echo").url_schemes == ("echo",)


def test_a_registered_type_is_listed_found_and_forgotten() -> None:
    assert plugins.find_connector_type("echo") is None
    ctype = relay_nb.register_connector_type(echo_type(url_schemes=("echo",)))
    assert plugins.find_connector_type("echo") is ctype
    assert plugins.connector_type_for_scheme("ECHO") is ctype
    (row,) = [t for t in relay_nb.connector_types() if t.name == "echo"]
    assert (row.source, row.origin, row.url_schemes, row.options) == (
        "notebook",
        "plugin_support",  # the module that defines its factory
        ("echo",),
        ("greeting",),
    )
    assert relay_nb.unregister_connector_type("echo") is ctype
    assert plugins.find_connector_type("echo") is None
    with pytest.raises(ConfigurationError, match="no connector type 'echo' was registered"):
        relay_nb.unregister_connector_type("echo")


def test_the_built_in_types_are_listed_with_their_aliases_and_schemes() -> None:
    rows = {t.name: t for t in relay_nb.connector_types() if t.source == "built-in"}
    assert set(rows) == {"sql", "mongo", "http", "websearch", "dataframe", "spark", "mcp"}
    assert not rows["spark"].in_config  # a session object, from Python only
    assert "sqlite" in rows["sql"].aliases and "postgresql" in rows["sql"].url_schemes
    assert rows["http"].url_schemes == ("http", "https")
    assert not rows["dataframe"].in_config and rows["sql"].in_config


def test_a_re_run_cell_replaces_its_type() -> None:
    first = relay_nb.register_connector_type(echo_type(description="v1"))
    second = relay_nb.register_connector_type(echo_type(description="v2"))
    assert first is not second
    assert plugins.find_connector_type("echo") is second
    assert [t.description for t in relay_nb.connector_types() if t.name == "echo"] == ["v2"]


def test_a_scheme_another_notebook_type_claims_is_refused() -> None:
    relay_nb.register_connector_type(echo_type(url_schemes=("echo",)))
    with pytest.raises(ConfigurationError, match="already claimed by connector type 'echo'"):
        relay_nb.register_connector_type(echo_type(name="echo2", url_schemes=("echo",)))
    relay_nb.register_connector_type(echo_type(url_schemes=("echo", "echos")))  # itself: fine


def test_only_a_connector_type_can_be_registered() -> None:
    with pytest.raises(
        ConfigurationError, match=r"expected a relay_nb\.ConnectorType, got the class Echo"
    ):
        relay_nb.register_connector_type(Echo)  # type: ignore[arg-type]


def test_options_come_from_the_config_model_with_its_aliases() -> None:
    from pydantic import AliasChoices, Field

    class Options(BaseModel):
        greeting: str = Field(default="hi", validation_alias=AliasChoices("greeting", "hello"))

    assert echo_type(config_model=Options).option_names() == ["greeting", "hello"]
    assert echo_type(factory=lambda connector_id, **kw: Echo(connector_id)).option_names() is None


def test_the_example_plugin_registers_from_a_cell(csvdir_module: ModuleType) -> None:
    relay_nb.register_connector_type(csvdir_module.CSVDIR)
    relay_nb.register_connector_type(csvdir_module.CSVDIR)  # the cell run again
    (row,) = [t for t in relay_nb.connector_types() if t.name == "csvdir"]
    assert row.url_schemes == ("csvdir",) and row.options == (
        "path",
        "pattern",
        "row_limit",
        "statement_timeout_s",
    )


def test_an_installed_sqlalchemy_dialect_s_scheme_is_refused_too() -> None:
    """duckdb_engine registers ``duckdb`` under ``sqlalchemy.dialects``: read from there."""
    from relay_nb.connectors import kinds as builtins

    assert "duckdb" in builtins._dialect_entry_points()
    assert builtins.is_sql_dialect_scheme("duckdb") and not builtins.is_sql_dialect_scheme("echo")
