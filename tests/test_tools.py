"""Tool.run: every failure becomes an error result the model can read, never a crash."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from relay_nb.errors import QueryExecutionError, QueryTimeoutError, UnsafeQueryError
from relay_nb.tools import Tool, ToolResult


class Args(BaseModel):
    sql: str = Field(description="one SELECT")
    limit: int = 10


def make(handler, **options) -> Tool:
    return Tool(
        name="query_shop", description="run SQL", input_model=Args, handler=handler, **options
    )


async def test_spec_is_the_input_models_json_schema():
    async def handler(args: Args) -> str:
        return "ok"

    spec = make(handler).spec()
    assert spec["name"] == "query_shop"
    assert spec["input_schema"]["properties"]["sql"]["description"] == "one SELECT"
    assert spec["input_schema"]["required"] == ["sql"]
    assert "title" not in spec["input_schema"]


async def test_success_passes_validated_arguments_and_wraps_strings():
    seen: list[Args] = []

    async def handler(args: Args) -> str:
        seen.append(args)
        return f"ran {args.sql} limit {args.limit}"

    result = await make(handler).run({"sql": "SELECT 1"})
    assert result == ToolResult(content="ran SELECT 1 limit 10", elapsed_ms=result.elapsed_ms)
    assert not result.is_error and result.elapsed_ms >= 0
    assert seen[0].limit == 10


async def test_invalid_input_is_an_error_result_naming_the_field():
    async def handler(args: Args) -> str:
        raise AssertionError("must not run")

    result = await make(handler).run({"limit": "many"})
    assert result.is_error and result.failure == "error"
    assert "invalid input for query_shop" in result.content
    assert "sql" in result.content and "limit" in result.content


async def test_guard_and_database_errors_go_back_to_the_model():
    async def unsafe(args: Args) -> str:
        raise UnsafeQueryError("not_a_query", "only SELECT is allowed")

    async def failed(args: Args) -> str:
        raise QueryExecutionError("the database refused the query: no such column: x")

    async def late(args: Args) -> str:
        raise QueryTimeoutError("the query ran longer than 1 s and was stopped")

    refused = await make(unsafe).run({"sql": "DROP TABLE x"})
    assert refused.is_error and refused.content == "not_a_query: only SELECT is allowed"
    broken = await make(failed).run({"sql": "SELECT x"})
    assert broken.is_error and "no such column" in broken.content
    stopped = await make(late).run({"sql": "SELECT x"})
    # why each failed, for an evaluation's reasons (the model reads only the content)
    assert (refused.failure, broken.failure, stopped.failure) == ("refused", "error", "timeout")


async def test_timeout_is_an_error_result():
    async def slow(args: Args) -> str:
        await asyncio.sleep(5)
        return "late"

    result = await make(slow, timeout_s=0.05).run({"sql": "SELECT 1"})
    assert result.is_error and "did not finish within 0.05 s" in result.content
    assert result.failure == "timeout"


async def test_unexpected_exceptions_are_contained_and_scrubbed(monkeypatch):
    secret = "pg-password-0123456789"
    monkeypatch.setenv("SHOP_DB_PASSWORD", secret)

    async def buggy(args: Args) -> str:
        raise RuntimeError(f"connection to postgresql://u:{secret}@db failed")

    result = await make(buggy).run({"sql": "SELECT 1"})
    assert result.is_error
    assert "RuntimeError" in result.content
    assert secret not in result.content and "[REDACTED]" in result.content


async def test_long_error_messages_are_clipped():
    async def chatty(args: Args) -> str:
        raise QueryExecutionError("x" * 5000)

    result = await make(chatty).run({"sql": "SELECT 1"})
    assert result.is_error and len(result.content) <= 600
