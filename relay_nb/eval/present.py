"""How a report and a regression diff read: a terminal summary and a static HTML table.

The figures live on :class:`~relay_nb.eval.report.EvalReport` (accuracy, reasons, per tag);
this module only lays them out, for ``relay-nb eval``'s terminal, a notebook cell's HTML
(static: no widgets, so a saved notebook keeps it) and ``--html``'s page.
"""

from __future__ import annotations

import html
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relay_nb.eval.report import EvalDiff, EvalReport

__all__ = ["diff_html", "diff_summary", "report_headline", "report_html", "report_summary"]


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
                for row in tags.itertuples()
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
    return (
        f'<div class="relay-eval-diff"><p><b>{html.escape(lines[0])}</b></p><ul>{items}</ul></div>'
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
        for r in tags.itertuples()
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
    return (
        '<div class="relay-eval">'
        f"<p><b>{esc(report_headline(report))}</b></p>"
        "<table><thead><tr><th>tag</th><th>right</th><th>accuracy</th></tr></thead>"
        f"<tbody>{tag_rows}</tbody></table>"
        "<table><thead><tr><th></th><th>id</th><th>question</th><th>reason</th><th>SQL</th>"
        "<th>tokens</th><th>cost</th><th>latency</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
