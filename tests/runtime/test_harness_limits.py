"""The harness limit wording (``relay_nb.runtime.harness_limits``), shared by every harness
CLI runtime: which CLI limit messages count as a rate limit, and the fixed, content-free
reason and reset time rebuilt from them. Pure functions, so no stub is spawned here; how a
runtime applies them to its CLI's output is tested next to that runtime."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from relay_nb.runtime.harness_limits import find_reset, rate_limit_error


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5-hour limit reached ∙ resets 3:30pm", "5-hour limit reached; resets 3:30pm"),
        (
            "You\u2019ve hit your limit · resets 3pm (Europe/Berlin)",
            "usage limit reached; resets 3pm",
        ),
        (
            "Opus weekly limit reached, resets on October 12th",
            "Opus weekly limit reached; resets Oct 12",
        ),
        ("Quota exceeded. Try again in 2 hours 5 minutes.", "quota exhausted; resets in 2h 5m"),
        ("Credit balance is too low", "credit balance too low"),
        ("429 Too Many Requests, resets at 17:45", "rate limit reached; resets 17:45"),
    ],
)
def test_limit_wording_maps_to_a_fixed_reason(text: str, message: str) -> None:
    error = rate_limit_error(text + " sk-secret-xyz", label="Claude Code", status_429=False)

    assert error is not None
    assert error.message == f"Claude Code rate limited: {message}"


@pytest.mark.parametrize(
    "text",
    [
        "Context window limit reached; please /compact",
        "Reached max turns limit (1)",
        "You have used 90% of your weekly limit",
        "output token limit exceeded",
        "session started",
        # A limit word only counts as a whole word, not as the tail of another one.
        "the first-rate limit was exceeded",
        "a corporate limit was exceeded",
        "the separate limit was hit",
        "per-request limit exceeded",
        "the workplan limit was reached",
        "first-rate limited edition",
    ],
)
def test_limits_that_are_not_rate_limits_are_ignored(text: str) -> None:
    assert rate_limit_error(text, label="Claude Code", status_429=False) is None


def test_rate_limit_label_names_the_harness() -> None:
    error = rate_limit_error("weekly limit reached", label="Codex", status_429=False)

    assert error is not None
    assert error.message == "Codex rate limited: weekly limit reached"
    assert rate_limit_error("", label="Codex", status_429=True) is not None


def test_epoch_reset_becomes_a_utc_time_and_a_retry_hint() -> None:
    now = datetime(2025, 10, 4, 12, 0, tzinfo=UTC)
    reset = find_reset("claude ai usage limit reached|1759593600", now=now)  # 16:00 UTC

    assert reset is not None
    assert reset.phrase == "resets Oct 4, 16:00 UTC"
    assert reset.seconds == 4 * 3600
