"""Cold ``import relay_nb`` vs a bare interpreter start, and vs importing what it defers.

Each sample is a fresh interpreter (``python -X importtime``), so module caches do not help;
the figure reported is the cumulative import time of the named module, median of 7 runs
(``anthropic`` alone takes ~1.5 s per sample).
"""

from __future__ import annotations

import statistics
import subprocess
import sys

MODULES = ("relay_nb", "relay_nb.runtime", "pydantic", "anthropic")


def _import_us(module: str) -> int:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    for line in reversed(out.splitlines()):
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1])
    raise RuntimeError(f"no importtime line for {module}")


def run(repeat: int = 7) -> dict[str, float]:
    medians = {m: statistics.median(_import_us(m) for _ in range(repeat)) / 1000 for m in MODULES}
    print(f"{'module':<20} {'median ms':>10} {'x relay_nb':>11}")
    for module, ms in medians.items():
        print(f"{module:<20} {ms:>10.1f} {ms / medians['relay_nb']:>11.1f}")
    return medians


if __name__ == "__main__":
    run()
