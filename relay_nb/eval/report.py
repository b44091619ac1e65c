"""What an evaluation run found: accuracy overall and per tag, a row per attempt, the misses
with their reasons, what it cost — and what changed since the previous run of the bank.

An :class:`EvalReport` is plain data (pydantic), so it is saved as JSON (under
``$RELAY_DATA_DIR/evals/``, see :func:`eval_dir`), loaded back, and compared with another
run of the same bank (:meth:`EvalReport.compare` → :class:`EvalDiff`). It shows itself as
a DataFrame (``.df``), a terminal summary (``.summary()``) and a static HTML table in a
notebook (``_repr_html_``: no widgets, so a saved notebook keeps it).

A question is *right* in a run when more than half of its attempts are (one attempt unless
``--repeat``); a regression diff compares questions by id on that verdict.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.errors import ConfigurationError
from relay_nb.eval.attempts import Attempt, EvalEstimate, eval_dir
from relay_nb.markup import NO_MATH_CLASSES, keep_dollars
from relay_nb.redaction import redact

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "EvalDiff",
    "EvalReport",
    "diff_html",
    "diff_summary",
    "report_headline",
    "report_html",
    "report_summary",
]


class EvalReport(BaseModel):
    """A finished run (see the module docstring)."""

    model_config = ConfigDict(frozen=False)

    bank: str
    bank_digest: str = ""
    bank_path: str = ""
    model: str = ""
    simulated: str | None = None
    """``scripted``/``replayed`` when no model answered: costs are estimates, not spent."""
    started_at: dt.datetime = Field(default_factory=lambda: dt.datetime.now(dt.UTC))
    elapsed_s: float = 0.0
    concurrency: int = 1
    repeat: int = 1
    batch: bool = False
    max_cost_usd: float | None = None
    estimate: EvalEstimate | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    path: str = ""
    """Where the report was saved ("" until :meth:`save`)."""

    # -- figures ----------------------------------------------------------------------------

    @property
    def scored(self) -> list[Attempt]:
        return [a for a in self.attempts if a.scored]

    @property
    def correct(self) -> int:
        return sum(a.correct for a in self.scored)

    @property
    def accuracy(self) -> float | None:
        """Right attempts over scored ones (a gold failure is not scored); None if none."""
        scored = self.scored
        return self.correct / len(scored) if scored else None

    @property
    def cost_usd(self) -> float | None:
        costs = [a.cost_usd for a in self.attempts]
        return None if any(c is None for c in costs) else round(sum(costs), 6)  # type: ignore[arg-type]

    @property
    def tokens(self) -> int:
        return sum(a.input_tokens + a.output_tokens for a in self.attempts)

    def verdicts(self) -> dict[str, bool]:
        """Per question id: right in this run (more than half of its attempts right)."""
        tally: dict[str, list[bool]] = {}
        for a in self.scored:
            tally.setdefault(a.question_id, []).append(a.correct)
        return {qid: sum(v) * 2 > len(v) for qid, v in tally.items()}

    def consistency(self) -> float | None:
        """With repeats: the share of questions whose attempts all agree (all right or all
        wrong); None for a single attempt each."""
        if self.repeat < 2:
            return None
        tally: dict[str, set[bool]] = {}
        for a in self.scored:
            tally.setdefault(a.question_id, set()).add(a.correct)
        return sum(len(v) == 1 for v in tally.values()) / len(tally) if tally else None

    def reasons(self) -> Counter[str]:
        """How many attempts missed for each reason (those the run's cost cap stopped
        before they answered are :attr:`not_run`, not misses)."""
        return Counter(a.reason for a in self.attempts if a.reason is not None and a.ran)

    @property
    def df(self) -> pd.DataFrame:
        """One row per attempt: question, verdict, reason, SQL, tokens, cost, latency."""
        import pandas as pd

        columns = [
            "question_id",
            "question",
            "attempt",
            "correct",
            "reason",
            "detail",
            "sql",
            "tags",
            "steps",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "latency_ms",
        ]
        rows = [
            {**a.model_dump(include=set(columns)), "tags": ", ".join(a.tags)} for a in self.attempts
        ]
        return pd.DataFrame(rows, columns=columns)

    def by_tag(self) -> pd.DataFrame:
        """Accuracy per tag (a question counts under each of its tags), best first."""
        import pandas as pd

        tally: dict[str, list[int]] = {}
        for a in self.scored:
            for tag in a.tags or ("(untagged)",):
                counts = tally.setdefault(tag, [0, 0])
                counts[0] += a.correct
                counts[1] += 1
        rows = [
            {"tag": tag, "attempts": n, "correct": right, "accuracy": right / n}
            for tag, (right, n) in tally.items()
        ]
        frame = pd.DataFrame(rows, columns=["tag", "attempts", "correct", "accuracy"])
        return frame.sort_values(["accuracy", "tag"], ascending=[False, True], ignore_index=True)

    # -- showing ----------------------------------------------------------------------------

    @property
    def not_run(self) -> int:
        """Attempts the run's cost cap stopped before they could answer."""
        return sum(not a.ran for a in self.attempts)

    def headline(self) -> str:
        """The first line: accuracy, model, tokens, cost, time."""
        return report_headline(self)

    def summary(self, *, misses: int = 20) -> str:
        """The terminal report: the headline, reasons, per-tag accuracy and the misses (a
        miss repeated over attempts once, with how many)."""
        return report_summary(self, misses=misses)

    def data(self) -> dict[str, Any]:
        """The report as JSON-ready data, secrets redacted, with its totals (what
        :meth:`save` writes and ``relay-nb eval --json`` prints)."""
        totals = {"accuracy": self.accuracy, "cost_usd": self.cost_usd, "tokens": self.tokens}
        return redact({**self.model_dump(mode="json"), **totals})

    def __repr__(self) -> str:
        return f"<EvalReport {self.headline()}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.summary())

    def _repr_html_(self) -> str:
        return report_html(self)

    # -- storing ----------------------------------------------------------------------------

    def save(self, path: str | Path | None = None) -> Path:
        """Write the report as JSON (secrets redacted) to ``path``: a file, or a folder to
        put a new file in (default :func:`eval_dir`). Returns the file."""
        target = Path(path).expanduser() if path is not None else eval_dir()
        if path is None or target.is_dir() or str(path).endswith(("/", "\\")):
            stamp = self.started_at.strftime("%Y%m%d-%H%M%S-%f")
            target = target / f"{_slug(self.bank)}-{stamp}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        self.path = str(target)
        scratch = target.with_name(f".{target.name}.tmp")
        text = json.dumps(self.data(), indent=1, ensure_ascii=False)
        scratch.write_text(text, encoding="utf-8")
        scratch.replace(target)
        return target

    @classmethod
    def load(cls, path: str | Path) -> EvalReport:
        target = Path(path).expanduser()
        try:
            data = json.loads(target.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigurationError(f"no saved evaluation at {str(target)!r}") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigurationError(f"cannot read evaluation {str(target)!r}: {exc}") from None
        for total in ("accuracy", "cost_usd", "tokens"):  # derived: data() adds them
            data.pop(total, None)
        report = cls.model_validate(data)
        report.path = str(target)
        return report

    def previous(self, directory: str | Path | None = None) -> EvalReport | None:
        """The latest saved run of the same bank (by name) that started before this one."""
        folder = Path(directory) if directory is not None else eval_dir()
        earlier = []
        for candidate in folder.glob(f"{_slug(self.bank)}-*.json"):
            if self.path and Path(self.path) == candidate:
                continue
            try:
                report = EvalReport.load(candidate)
            except (ConfigurationError, ValueError):
                continue
            if report.bank == self.bank and report.started_at < self.started_at:
                earlier.append(report)
        return max(earlier, key=lambda r: r.started_at) if earlier else None

    def compare(self, previous: EvalReport | str | Path | None = None) -> EvalDiff:
        """What changed since ``previous`` (a report or its file; default: the previous
        saved run of this bank)."""
        if previous is None:
            previous = self.previous()
            if previous is None:
                raise ConfigurationError(
                    f"no earlier saved run of bank {self.bank!r} in {eval_dir()}; run it once "
                    "more to compare, or pass the run to compare with"
                )
        elif not isinstance(previous, EvalReport):
            previous = EvalReport.load(previous)
        return EvalDiff.between(previous, self)


class EvalDiff(BaseModel):
    """Two runs of a bank side by side: the questions that flipped and the deltas."""

    model_config = ConfigDict(frozen=True)

    before: str
    after: str
    same_bank: bool
    """False when the questions or expected results changed between the runs."""
    accuracy_before: float | None
    accuracy_after: float | None
    cost_before: float | None
    cost_after: float | None
    fixed: list[str] = Field(default_factory=list)
    """Question ids wrong before, right now."""
    broken: list[str] = Field(default_factory=list)
    """Question ids right before, wrong now."""
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    reasons: dict[str, str] = Field(default_factory=dict)
    """For each broken question, why it is wrong now."""

    @classmethod
    def between(cls, before: EvalReport, after: EvalReport) -> EvalDiff:
        old, new = before.verdicts(), after.verdicts()
        why = {a.question_id: a.reason or "" for a in after.attempts if not a.correct}
        broken = [q for q in new if q in old and old[q] and not new[q]]
        return cls(
            before=_label(before),
            after=_label(after),
            same_bank=before.bank_digest == after.bank_digest,
            accuracy_before=before.accuracy,
            accuracy_after=after.accuracy,
            cost_before=before.cost_usd,
            cost_after=after.cost_usd,
            fixed=[q for q in new if q in old and new[q] and not old[q]],
            broken=broken,
            added=[q for q in new if q not in old],
            removed=[q for q in old if q not in new],
            reasons={q: why.get(q, "") for q in broken},
        )

    @property
    def accuracy_delta(self) -> float | None:
        if self.accuracy_before is None or self.accuracy_after is None:
            return None
        return self.accuracy_after - self.accuracy_before

    @property
    def cost_delta(self) -> float | None:
        if self.cost_before is None or self.cost_after is None:
            return None
        return round(self.cost_after - self.cost_before, 6)

    def summary(self) -> str:
        """Accuracy and cost before and after, and the questions that flipped."""
        return diff_summary(self)

    def __repr__(self) -> str:
        return f"<EvalDiff {self.summary().splitlines()[0]}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.summary())

    def _repr_html_(self) -> str:
        return diff_html(self)


def _label(report: EvalReport) -> str:
    return f"{report.model or '?'} at {report.started_at:%Y-%m-%d %H:%M}"


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:60] or "bank"


# -- how a report and a diff read: a terminal summary and a static HTML table ---------------
# (for relay-nb eval's terminal, a notebook cell's HTML, static so a saved notebook keeps it,
# and --html's page)


def report_headline(report: EvalReport) -> str:
    """The first line of a report: accuracy, model, tokens, cost, time."""
    accuracy = report.accuracy
    shown = "n/a" if accuracy is None else f"{accuracy:.1%}"
    cost = "cost unknown" if report.cost_usd is None else f"${report.cost_usd:.4f}"
    if report.simulated:
        cost += f" ({report.simulated}, not spent)"
    if report.estimate is not None and report.estimate.cost_usd is not None:
        cost += f", estimated ≈ ${report.estimate.cost_usd:.4f}"
    parts = [
        f"{report.bank}: accuracy {shown} ({report.correct}/{len(report.scored)})",
        f"model {report.model or '?'}",
        f"{report.tokens:,} tokens",
        cost,
        f"{report.elapsed_s:.1f} s",
    ]
    if report.not_run:
        parts.insert(1, f"{report.not_run} not run (the run's cost cap)")
    consistency = report.consistency()
    if consistency is not None:
        repeats = f"{report.repeat} attempts each"
        parts.insert(1, f"consistent on {consistency:.0%} of questions ({repeats})")
    return " · ".join(parts)


class _TagRow(Protocol):
    """A row of :meth:`EvalReport.by_tag` as ``itertuples`` gives it."""

    tag: str
    attempts: int
    correct: int
    accuracy: float


def _tag_rows(tags: pd.DataFrame) -> Iterator[_TagRow]:
    # itertuples makes namedtuples with by_tag's column names as fields (the stubs can only
    # say tuples)
    return cast("Iterator[_TagRow]", tags.itertuples())


def report_summary(report: EvalReport, *, misses: int = 20) -> str:
    """The terminal report: the headline, reasons, per-tag accuracy and the misses (a
    miss repeated over attempts once, with how many)."""
    lines = [report_headline(report)]
    reasons = report.reasons()
    if reasons:
        lines.append("  misses: " + ", ".join(f"{r} {n}" for r, n in reasons.most_common()))
    tags = report.by_tag()
    if len(tags) > 1 or (len(tags) == 1 and tags.iloc[0]["tag"] != "(untagged)"):
        lines.append(
            "  by tag: "
            + ", ".join(
                f"{row.tag} {row.accuracy:.0%} ({row.correct}/{row.attempts})"
                for row in _tag_rows(tags)
            )
        )
    grouped: Counter[tuple[str, str, str]] = Counter(
        (a.question_id, a.reason or "", a.detail)
        for a in report.attempts
        if not a.correct and a.ran
    )
    for (question_id, reason, detail), count in list(grouped.items())[:misses]:
        times = f" ({count} of {report.repeat} attempts)" if report.repeat > 1 else ""
        said = f" — {detail}" if detail else ""
        lines.append(f"  ✗ {question_id}: {reason}{said}{times}")
    if len(grouped) > misses:
        lines.append(f"  … and {len(grouped) - misses} more misses (report.df has them all)")
    if report.path:
        lines.append(f"  saved: {report.path}")
    return "\n".join(lines)


def diff_summary(diff: EvalDiff) -> str:
    """Accuracy and cost before and after, and the questions that flipped."""
    delta = diff.accuracy_delta
    accuracy = (
        "accuracy n/a"
        if delta is None
        else f"accuracy {diff.accuracy_before:.1%} → {diff.accuracy_after:.1%} "
        f"({delta * 100:+.1f} points)"
    )
    if diff.cost_delta is None:
        cost = "cost n/a"
    else:
        change = round(diff.cost_delta, 4) + 0.0  # + 0.0: never "-0.0000"
        cost = f"cost ${diff.cost_before:.4f} → ${diff.cost_after:.4f} ({change:+.4f})"
    lines = [f"since {diff.before}: {accuracy}; {cost}"]
    if not diff.same_bank:
        lines.append("  note: the bank's questions or expected results changed in between")
    for qid in diff.broken:
        lines.append(f"  ✗ now wrong: {qid} ({diff.reasons.get(qid) or 'wrong'})")
    lines += [f"  ✓ now right: {qid}" for qid in diff.fixed]
    if diff.added:
        lines.append(f"  new questions: {', '.join(diff.added)}")
    if diff.removed:
        lines.append(f"  removed questions: {', '.join(diff.removed)}")
    if not (diff.broken or diff.fixed):
        lines.append("  no question changed its verdict")
    return "\n".join(lines)


def diff_html(diff: EvalDiff) -> str:
    lines = diff_summary(diff).splitlines()
    items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in lines[1:])
    return keep_dollars(
        f'<div class="relay-eval-diff {NO_MATH_CLASSES}"><p><b>{html.escape(lines[0])}</b></p>'
        f"<ul>{items}</ul></div>"
    )


_LEFT = ' style="text-align:left"'
"""Text reads from the left (JupyterLab right-aligns every table cell)."""


def report_html(report: EvalReport) -> str:
    """A static table: the headline, accuracy per tag, and every attempt (misses first)."""
    esc = html.escape
    tags = report.by_tag()
    tag_rows = "".join(
        f"<tr><td{_LEFT}>{esc(str(r.tag))}</td><td>{r.correct}/{r.attempts}</td>"
        f"<td>{r.accuracy:.0%}</td></tr>"
        for r in _tag_rows(tags)
    )
    ordered = sorted(report.attempts, key=lambda a: (a.correct, a.question_id, a.attempt))
    rows = []
    for a in ordered:
        mark = "✓" if a.correct else "✗"
        cost = "?" if a.cost_usd is None else f"${a.cost_usd:.4f}"
        why = esc(a.reason or "") + (f" — {esc(a.detail)}" if a.detail else "")
        rows.append(
            f"<tr><td>{mark}</td><td{_LEFT}>{esc(a.question_id)}</td>"
            f"<td{_LEFT}>{esc(a.question)}</td><td{_LEFT}>{why}</td>"
            f"<td{_LEFT}><code>{esc(a.sql)}</code></td>"
            f"<td>{a.input_tokens + a.output_tokens:,}</td><td>{cost}</td>"
            f"<td>{a.latency_ms:,.0f} ms</td></tr>"
        )
    return keep_dollars(
        f'<div class="relay-eval {NO_MATH_CLASSES}">'
        f"<p><b>{esc(report_headline(report))}</b></p>"
        "<table><thead><tr><th>tag</th><th>right</th><th>accuracy</th></tr></thead>"
        f"<tbody>{tag_rows}</tbody></table>"
        "<table><thead><tr><th></th><th>id</th><th>question</th><th>reason</th><th>SQL</th>"
        "<th>tokens</th><th>cost</th><th>latency</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
