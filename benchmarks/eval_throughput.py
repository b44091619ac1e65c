"""Evaluation throughput: the shipped shop bank through ``relay.evaluate`` at concurrency
1 / 4 / 16, and what the harness costs beyond the turns themselves.

The bank (``examples/shop_questions.yaml``, its 34 gold-SQL questions, 4 times each: 136
attempts) runs on the demo shop (SQLite) with the oracle as the model (a scripted model
replaying the gold SQL, with fixed usage figures so no prompt is serialised to estimate them
— a cost of the test double, not of a run). Side by side in the same process, at the same
concurrency: the same questions through ``relay.ask_many`` — the turns alone, without the
gold queries, the cost estimate and the scoring. The harness's overhead per attempt is
(evaluate - ask_many) / attempts, beside the turns' own time per attempt; medians of 5.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from relay_nb.demo.data import build_shop_database
from relay_nb.eval import load_bank, oracle_script
from relay_nb.facade.relay import Relay
from relay_nb.runtime.scripted import ScriptedRuntime

BANK = Path(__file__).resolve().parents[1] / "examples" / "shop_questions.yaml"
LEVELS = (1, 4, 16)
REPEAT = 4
RUNS = 5
_USAGE = {"input_tokens": 1500, "output_tokens": 60}


def _oracle() -> ScriptedRuntime:
    script = oracle_script(BANK)["by_question"]
    for steps in script.values():
        for step in steps:
            step["usage"] = _USAGE
    return ScriptedRuntime(by_question=script, model="claude-sonnet-4-6")


def _median_s(work: Any) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _measure(url: str) -> dict[str, Any]:
    full = load_bank(BANK)
    bank = full.model_copy(update={"questions": tuple(q for q in full.questions if q.sql)})
    attempts = len(bank.questions) * REPEAT
    asked = [q.question for q in bank.questions for _ in range(REPEAT)]
    relay = Relay(_oracle(), ledger=False)
    results: dict[str, Any] = {"questions": len(bank.questions), "attempts": attempts}
    try:
        relay.connect("shop", url)
        report = relay.evaluate(bank, save=False)  # warm: catalog, profile, guard
        results["accuracy"] = report.accuracy
        for level in LEVELS:
            evaluate_s = _median_s(
                lambda level=level: relay.evaluate(
                    bank, repeat=REPEAT, concurrency=level, save=False
                )
            )
            turns_s = _median_s(lambda level=level: relay.ask_many(asked, concurrency=level))
            results[f"c{level}"] = {
                "evaluate_s": evaluate_s,
                "ask_many_s": turns_s,
                "attempts_per_s": attempts / evaluate_s,
                "turns_per_s": attempts / turns_s,
                "overhead_per_attempt_ms": (evaluate_s - turns_s) * 1000 / attempts,
                "turns_ms_per_attempt": turns_s * 1000 / attempts,
            }
    finally:
        relay.close()
    return results


def _print(results: dict[str, Any]) -> None:
    print(
        f"-- {results['attempts']} attempts ({results['questions']} questions x {REPEAT}), "
        f"oracle model, SQLite demo shop; accuracy {results['accuracy']:.0%}; medians of {RUNS}"
    )
    print(
        f"{'concurrency':>11} {'evaluate q/s':>13} {'ask_many q/s':>13} "
        f"{'harness ms/attempt':>19} {'turns ms/attempt':>17}"
    )
    for level in LEVELS:
        r = results[f"c{level}"]
        print(
            f"{level:>11} {r['attempts_per_s']:>13.1f} {r['turns_per_s']:>13.1f} "
            f"{r['overhead_per_attempt_ms']:>19.2f} {r['turns_ms_per_attempt']:>17.2f}"
        )


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="relay_eval_bench_") as scratch:
        shop = build_shop_database(Path(scratch) / "shop.sqlite")
        results = _measure(shop.url)
    _print(results)
    return results


if __name__ == "__main__":
    run()
