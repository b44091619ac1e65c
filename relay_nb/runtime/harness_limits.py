"""Failure wording shared by the harness profiles (Claude Code, Codex, OpenCode).

A harness CLI reports a usage or rate limit in prose ("Weekly limit reached ∙ resets Oct 4,
2pm"). :func:`rate_limit_error` recognises only the forms that say a limit was *hit* and
rebuilds a short reason from fixed phrases plus a reset time re-rendered from strictly
matched numbers, so nothing of the CLI's text (which may hold prompts, keys or provider
payloads) is ever copied into the error. The harness is named by the caller's ``label``.

:func:`harness_failure` applies the Relay harness order (structured status, structured
limit, auth wording, limit wording, unavailability wording, exit code) to evidence a profile
has already pulled out of its CLI's output, so every harness classifies the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from relay_nb.errors import InvocationError

__all__ = [
    "AUTH_TEXT",
    "Reset",
    "find_reset",
    "harness_failure",
    "limit_reason",
    "rate_limit_error",
]

AUTH_TEXT = re.compile(
    r"invalid (?:x-)?api[ -]?key|authentication[ _](?:error|failed)|\bunauthori[sz]ed\b"
    r"|not (?:logged|signed) in|please run /login|\blog ?in again\b|oauth token"
    r"|token (?:has )?expired|invalid (?:bearer )?(?:token|credentials?)"
    r"|credentials? (?:are |is )?(?:missing|invalid|expired)|permission_error"
    r"|api error:\s*40[13]\b|incorrect api key|invalid_api_key|no api key|api key (?:is )?missing"
    r"|providerautherror|please (?:log|sign) ?in\b|sign in again",
    re.IGNORECASE,
)
"""Wording that means the CLI's login or key was refused (any harness)."""
_UNAVAILABLE_TEXT = re.compile(
    r"\b(?:overloaded|unavailable|temporarily|temporary (?:errors?|outage|failure)"
    r"|high demand|over capacity)\b",
    re.IGNORECASE,
)
_REFUSED_SETUP = re.compile(
    r"unexpected argument|unrecognized (?:option|argument|subcommand)|no longer supported"
    r"|unknown (?:option|flag|argument|field|variant|configuration)|invalid value for"
    r"|(?:error|failed to) (?:loading|load|parsing|parse) (?:the )?config",
    re.IGNORECASE,
)
"""Wording of a CLI that refused how it was started (a flag, a ``-c`` key, a config value):
a CLI newer or older than the one relay_nb was tested with."""


def harness_failure(
    *,
    label: str,
    login_hint: str,
    report_text: str,
    stderr_text: str,
    status: int | None,
    exit_code: int | None,
    failed_run: str = "reported a failed run",
    tested: str = "",
    events_seen: bool | None = None,
) -> InvocationError:
    """Steps 1-6 of the Relay harness order, from evidence the profile extracted.

    ``report_text``/``status`` come from the CLI's structured error report (never from a
    successful answer, which is model prose); ``exit_code`` None means the run exited 0 but
    reported an error, so only steps 1-4 apply. ``login_hint`` says how to log in again;
    ``failed_run`` is the fixed phrase for an exit-0 failure. ``tested`` names the CLI
    release relay_nb was tested with (``"@openai/codex 0.169.0"``); ``events_seen`` False
    says the CLI exited before printing any event. No input text is copied: a failure
    nothing above recognises says which of relay_nb's expectations broke instead.
    """
    if status in (401, 403):
        return _auth_error(label, login_hint, status)
    limited = rate_limit_error(report_text, label=label, status_429=status == 429)
    if limited is not None:
        return limited
    if AUTH_TEXT.search(stderr_text) or AUTH_TEXT.search(report_text):
        return _auth_error(label, login_hint, None)
    limited = rate_limit_error(stderr_text, label=label, status_429=False)
    if limited is not None:
        return limited
    if exit_code is None:
        return InvocationError("RUNTIME_FAILURE", f"{label} {failed_run}", False)
    pinned = f" ({tested})" if tested else ""
    if _REFUSED_SETUP.search(stderr_text):  # before the wording of an outage: its text is prose
        return InvocationError(
            "RUNTIME_FAILURE",
            f"{label} {_exit_phrase(exit_code)}: it refused an option or a setting it was "
            f"started with (relay_nb's, or your extra_args); if not yours, the installed CLI "
            f"is not the release relay_nb was tested with{pinned}: install that release, or "
            "upgrade relay_nb",
            False,
        )
    if (status is not None and status >= 500 and status != 501) or any(
        _UNAVAILABLE_TEXT.search(t) for t in (stderr_text, report_text)
    ):
        return InvocationError(
            "PROVIDER_UNAVAILABLE",
            f"{label} reports the model service is overloaded or unavailable; try again shortly",
            True,
        )
    if events_seen is False:
        return InvocationError(
            "RUNTIME_FAILURE",
            f"{label} {_exit_phrase(exit_code)} before it printed any event (relay_nb reads "
            f"its JSON event stream); run the CLI by hand to see its error, and check it is "
            f"the release relay_nb was tested with{pinned}",
            False,
        )
    return InvocationError("RUNTIME_FAILURE", f"{label} {_exit_phrase(exit_code)}", False)


def _exit_phrase(exit_code: int) -> str:
    """As :func:`relay_nb.runtime.process.exit_description` (not imported: process imports
    the runtime base, and this module stays a leaf)."""
    if exit_code < 0:
        return f"was killed by signal {-exit_code}"
    return f"exited with code {exit_code}"


def _auth_error(label: str, login_hint: str, status: int | None) -> InvocationError:
    suffix = f" (HTTP {status})" if status is not None else ""
    return InvocationError(
        "AUTHENTICATION_FAILED",
        f"{label} is not logged in or its credentials were refused{suffix}; {login_hint}",
        False,
    )


_WORD_START = r"(?<![\w-])"
"""A whole word only: "first-rate", "corporate" or "per-request" must not read as a kind."""
_KIND_WORDS = (
    _WORD_START + r"(?:(?P<model>opus|sonnet) )?"
    r"(?P<kind>weekly|5[- ]?hour|five[- ]hour|5h|daily|monthly|session|usage|opus|sonnet"
    r"|rate|request|plan|subscription)"
)
# Only forms that say a limit was *hit*: "weekly limit" alone may be a usage warning, and a
# context-window, turn or output-token limit is not a rate limit at all.
_LIMIT_PATTERNS: tuple[tuple[re.Pattern[str], str | None], ...] = (
    (re.compile(r"claude ai usage limit reached"), "usage"),  # Claude Code's "...|<epoch>" form
    (
        re.compile(
            _KIND_WORDS + r" (?:usage )?limits? (?:has been |was )?(?:reached|exceeded|hit)"
        ),
        None,
    ),
    (
        re.compile(
            r"\b(?:you've|you have|you) (?:hit|reached|exceeded) (?:your|the) "
            r"(?:" + _KIND_WORDS + r" )?(?:usage )?limit\b"
        ),
        None,
    ),
    (re.compile(r"\bout of (?:extra )?usage\b"), "usage"),
    (re.compile(r"credit balance is too low|out of credits"), "credit"),
    (
        re.compile(
            r"quota (?:has been )?(?:exceeded|exhausted|reached)|exceeded your (?:current )?quota"
        ),
        "quota",
    ),
    (
        re.compile(
            _WORD_START
            + r"rate[ _-]?limit(?:ed\b|_error| (?:reached|exceeded|hit))"
            + r"|too many requests|(?:api error|status|http)[: ]+429\b"
        ),
        "rate",
    ),
)
_KIND_PHRASES = {
    "weekly": "weekly limit reached",
    "5-hour": "5-hour limit reached",
    "daily": "daily limit reached",
    "monthly": "monthly limit reached",
    "session": "session limit reached",
    "opus": "Opus limit reached",
    "sonnet": "Sonnet limit reached",
    "usage": "usage limit reached",
    "credit": "credit balance too low",
    "quota": "quota exhausted",
    "rate": "rate limit reached",
}
_KIND_ALIASES = {
    "5hour": "5-hour",
    "5 hour": "5-hour",
    "five-hour": "5-hour",
    "five hour": "5-hour",
    "5h": "5-hour",
    "request": "rate",
    "plan": "usage",
    "subscription": "usage",
}


def rate_limit_error(text: str, *, label: str, status_429: bool) -> InvocationError | None:
    """A RATE_LIMITED error when ``text`` says a limit was hit (or the status was 429).

    ``label`` names the harness ("Claude Code"). The reason is a fixed phrase plus, when
    present, a reset time rebuilt from strictly matched numbers, so nothing of ``text``
    itself is copied.
    """
    normalized = text.replace("\u2019", "'").lower()
    reason = limit_reason(normalized)
    if reason is None and not status_429:
        return None
    reset = find_reset(normalized)
    message = f"{label} rate limited: {reason or _KIND_PHRASES['rate']}"
    if reset is not None:
        message += f"; {reset.phrase}"
    return InvocationError(
        "RATE_LIMITED", message, True, retry_after_s=reset.seconds if reset else None
    )


def limit_reason(normalized: str) -> str | None:
    """The fixed phrase for the limit the (lowercased) text says was hit, if any."""
    for pattern, fixed in _LIMIT_PATTERNS:
        match = pattern.search(normalized)
        if match is None:
            continue
        if fixed is not None:
            return _KIND_PHRASES[fixed]
        word = match.group("kind") or "usage"
        kind = _KIND_ALIASES.get(word, word)
        phrase = _KIND_PHRASES.get(kind, _KIND_PHRASES["usage"])
        model = match.group("model")
        if model is not None and model != kind:  # "Opus weekly limit reached"
            phrase = f"{model.capitalize()} {phrase}"
        return phrase
    return None


@dataclass(frozen=True, slots=True)
class Reset:
    phrase: str
    seconds: float | None = None


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_RE = r"(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]{0,6}\.?"
_CLOCK_RE = (
    r"(?:(?P<h12>1[0-2]|0?[1-9])(?::(?P<m12>[0-5]\d))? ?(?P<ampm>[ap])\.?m\.?"
    r"|(?P<h24>[01]?\d|2[0-3]):(?P<m24>[0-5]\d))"
)
_ANCHOR = r"\b(?:resets?|try again|available again)\b(?: (?:at|on|in|after))?[ :]*"
_EPOCH = re.compile(r"usage limit reached\|(?P<epoch>\d{10,13})\b")
_DATE = re.compile(
    _ANCHOR + _MONTH_RE + r" (?P<day>[0-2]?\d|3[01])(?:st|nd|rd|th)?\b"
    r"(?:,? (?P<year>20\d\d)\b)?(?:,? (?:at )?" + _CLOCK_RE + r")?"
)
_CLOCK = re.compile(_ANCHOR + _CLOCK_RE)
_DURATION = re.compile(
    _ANCHOR + r"(?P<span>(?:\d{1,4} ?(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)"
    r"\b[ ,]*(?:and )?){1,4})"
)
_DURATION_PART = re.compile(r"(\d{1,4}) ?(d|h|m|s)")
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def find_reset(normalized: str, *, now: datetime | None = None) -> Reset | None:
    """A reset time in the limit text, re-rendered from its matched numbers only."""
    if match := _EPOCH.search(normalized):
        return _epoch_reset(int(match.group("epoch")), now or datetime.now(UTC))
    if match := _DATE.search(normalized):
        return _date_reset(match)
    if match := _DURATION.search(normalized):
        return _duration_reset(match.group("span"))
    if match := _CLOCK.search(normalized):
        return Reset(f"resets {_clock(match)}")
    return None


def _epoch_reset(epoch: int, now: datetime) -> Reset | None:
    seconds = epoch / 1000 if epoch >= 10**12 else float(epoch)
    try:
        when = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    wait = (when - now).total_seconds()
    phrase = f"resets {_MONTHS[when.month - 1].capitalize()} {when.day}, {when:%H:%M} UTC"
    return Reset(phrase, wait if wait > 0 else None)


def _date_reset(match: re.Match[str]) -> Reset:
    phrase = f"resets {match.group('month').capitalize()} {int(match.group('day'))}"
    if match.group("year"):
        phrase += f", {match.group('year')}"
    if match.group("h12") or match.group("h24"):
        phrase += f", {_clock(match)}"
    return Reset(phrase)


def _duration_reset(span: str) -> Reset:
    parts = [(int(n), unit) for n, unit in _DURATION_PART.findall(span)]
    seconds = float(sum(n * _UNIT_SECONDS[unit] for n, unit in parts))
    return Reset("resets in " + " ".join(f"{n}{unit}" for n, unit in parts), seconds)


def _clock(match: re.Match[str]) -> str:
    if match.group("h12"):
        minutes = f":{match.group('m12')}" if match.group("m12") else ""
        return f"{int(match.group('h12'))}{minutes}{match.group('ampm')}m"
    return f"{int(match.group('h24')):02d}:{match.group('m24')}"
