"""Tool.from_function: a typed, documented function becomes a tool the model can call."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from typing import Annotated, Literal

import pandas as pd
import pytest
from pydantic import Field

from relay_nb.errors import ConfigurationError, UnsafeQueryError
from relay_nb.tools import Tool, ToolResult, tool_from_function


def top_customers(
    region: str,
    limit: int = 10,
    order: Literal["revenue", "orders"] = "revenue",
    schema: str = "main",
) -> list[str]:
    """Find the best customers of a region.

    Used when a question asks who buys the most.

    Args:
        region (str): Sales region code,
            e.g. 'EMEA'.
        limit: How many customers to return.
        schema: Which schema to read.

    Returns:
        Customer names.
    """
    return [f"{region}:{order}:{schema}"] * limit


def test_schema_comes_from_the_signature_and_the_docstring():
    spec = Tool.from_function(top_customers).spec()
    schema = spec["input_schema"]
    assert spec["name"] == "top_customers"
    assert spec["description"] == "Find the best customers of a region."
    assert schema["required"] == ["region"]
    props = schema["properties"]
    assert props["region"]["type"] == "string"
    assert props["region"]["description"] == "Sales region code, e.g. 'EMEA'."
    assert props["limit"] == {
        "default": 10,
        "description": "How many customers to return.",
        "title": "Limit",
        "type": "integer",
    }
    assert props["order"]["enum"] == ["revenue", "orders"] and "description" not in props["order"]
    # 'schema' shadows a BaseModel attribute: it is aliased, so the model still sees its name
    assert props["schema"]["description"] == "Which schema to read."
    assert schema["additionalProperties"] is False


def test_sphinx_params_annotated_descriptions_and_explicit_overrides():
    def scale(value: float, factor: Annotated[float, Field(description="own words", gt=0)] = 2):
        """Scale a number.

        :param float value: the number
            to scale
        :param factor: ignored, the Annotated description wins
        """
        return value * factor

    tool = Tool.from_function(
        scale, name="scale-v2", description="Multiply.", requires_approval=True, timeout_s=5
    )
    spec = tool.spec()
    props = spec["input_schema"]["properties"]
    assert spec["name"] == "scale-v2" and spec["description"] == "Multiply."
    assert props["value"]["description"] == "the number to scale"
    assert props["factor"]["description"] == "own words"
    assert props["factor"]["exclusiveMinimum"] == 0
    assert tool.requires_approval and tool.timeout_s == 5


async def test_sync_function_runs_in_a_worker_thread_with_keyword_arguments():
    seen: dict[str, object] = {}

    def record(region: str, schema: str = "main", limit: int = 1) -> str:
        """Record the call."""
        seen.update(region=region, schema=schema, limit=limit, thread=threading.get_ident())
        return "recorded"

    result = await Tool.from_function(record).run({"region": "EMEA", "schema": "s", "limit": "3"})
    assert result.content == "recorded" and not result.is_error
    assert seen["region"] == "EMEA" and seen["schema"] == "s" and seen["limit"] == 3
    assert seen["thread"] != threading.get_ident()


async def test_async_function_is_awaited_and_tool_result_passes_through():
    async def fetch(key: str) -> ToolResult:
        """Fetch a value."""
        await asyncio.sleep(0)
        return ToolResult(content=f"value of {key}", artifact={"key": key})

    result = await tool_from_function(fetch).run({"key": "k"})
    assert result.content == "value of k" and result.artifact == {"key": "k"}


async def test_other_return_values_become_clipped_json():
    def info(n: int) -> object:
        """Describe something."""
        return {"n": n, "when": pd.Timestamp("2026-01-02")} if n < 10 else "x" * n

    def big(n: int) -> list[str]:
        """Return a lot."""
        return ["y" * 100] * n

    small = await Tool.from_function(info).run({"n": 1})
    assert small.content == '{"n": 1, "when": "2026-01-02 00:00:00"}'
    clipped = await Tool.from_function(big).run({"n": 100})
    assert len(clipped.content) == 4000 and clipped.content.endswith("…")


async def test_dataframe_becomes_a_preview_and_the_frame_an_artifact():
    frame = pd.DataFrame({"id": range(100), "name": [f"customer {i}" for i in range(100)]})

    def customers(limit: int) -> pd.DataFrame:
        """List customers."""
        return frame.head(limit)

    result = await Tool.from_function(customers).run({"limit": 100})
    lines = result.content.splitlines()
    assert lines[0] == "100 rows, 2 columns; showing the first 20"
    assert lines[1] == "id,name" and lines[2] == "0,customer 0" and len(lines) == 22
    assert isinstance(result.artifact, pd.DataFrame) and result.artifact.equals(frame)

    small = await Tool.from_function(customers).run({"limit": 2})
    assert small.content.splitlines() == [
        "2 rows, 2 columns",
        "id,name",
        "0,customer 0",
        "1,customer 1",
    ]


async def test_wide_dataframe_preview_stays_within_2000_chars_and_keeps_whole_rows():
    wide = pd.DataFrame({"text": ["z" * 300] * 50})

    def dump() -> pd.DataFrame:
        """Dump."""
        return wide

    result = await Tool.from_function(dump).run({})
    assert len(result.content) <= 2000
    lines = result.content.splitlines()
    shown = len(lines) - 2
    assert 0 < shown < 20 and lines[0] == f"50 rows, 1 column; showing the first {shown}"
    assert all(line == "z" * 300 for line in lines[2:])


async def test_validation_errors_and_failures_come_back_as_error_results():
    tool = Tool.from_function(top_customers)
    missing = await tool.run({"limit": "many", "regoin": "EMEA"})
    assert missing.is_error and "invalid input for top_customers" in missing.content
    assert "region" in missing.content and "limit" in missing.content
    assert "regoin" in missing.content  # an unexpected key is reported, not ignored

    def guarded(sql: str) -> str:
        """Run SQL."""
        raise UnsafeQueryError("not_a_query", "only SELECT is allowed")

    refused = await Tool.from_function(guarded).run({"sql": "DROP TABLE x"})
    assert refused.is_error and refused.content == "not_a_query: only SELECT is allowed"


async def test_slow_function_times_out_as_an_error_result():
    async def slow(seconds: float) -> str:
        """Sleep."""
        await asyncio.sleep(seconds)
        return "done"

    result = await Tool.from_function(slow, timeout_s=0.05).run({"seconds": 5})
    assert result.is_error and "did not finish within 0.05 s" in result.content


class _Opaque:
    """Not a type pydantic can describe as JSON."""


def _no_hint(region, limit: int = 1) -> str:
    """Doc."""
    return ""


def _star_args(*regions: str) -> str:
    """Doc."""
    return ""


def _star_kwargs(region: str, **options: str) -> str:
    """Doc."""
    return ""


def _positional_only(region: str, /) -> str:
    """Doc."""
    return ""


def _undocumented(region: str) -> str:
    return ""


def _only_sections(region: str) -> str:
    """Args:
    region: a region.
    """
    return ""


@pytest.mark.parametrize(
    ("func", "options", "expected"),
    [
        (_no_hint, {}, "parameter 'region' has no type hint"),
        (_star_args, {}, "*regions cannot be described"),
        (_star_kwargs, {}, "**options cannot be described"),
        (_positional_only, {}, "'region' is positional-only"),
        (_undocumented, {}, "has no description"),
        (_only_sections, {}, "has no description"),
        (_undocumented, {"name": "bad name!"}, "tool name 'bad name!'"),
        (_undocumented, {"name": "x" * 65}, "must be 1-64"),
        (lambda region: region, {"description": "d"}, "tool name '<lambda>'"),
    ],
)
def test_refusals_name_the_problem(func, options, expected):
    with pytest.raises(ConfigurationError) as caught:
        Tool.from_function(func, **options)
    assert expected in str(caught.value)


def test_explicit_description_rescues_an_undocumented_function():
    assert Tool.from_function(_undocumented, description="Look up.").description == "Look up."


def test_hints_that_cannot_be_resolved_or_serialised_are_configuration_errors():
    class Local:
        pass

    def uses_local(thing: Local) -> str:
        """Doc."""
        return ""

    with pytest.raises(ConfigurationError, match="cannot resolve the type hints"):
        Tool.from_function(uses_local)  # 'Local' is a string hint only the closure knows

    def opaque(lock: _Opaque) -> str:
        """Doc."""
        return ""

    with pytest.raises(ConfigurationError, match="cannot become a JSON schema"):
        Tool.from_function(opaque)


def test_importing_tools_does_not_import_pandas():
    code = "import sys, relay_nb.tools; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
