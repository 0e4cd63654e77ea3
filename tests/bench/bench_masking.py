"""Benchmark masking on hostile values: is the cost of a value linear in its size?

    make bench-masking      # or: python -m tests.bench.bench_masking

For each hostile unit the unit tests use (a fragment that makes a careless rule backtrack),
masks 1 KB and 1 MB of it repeated and prints both times and their ratio. A linear rule costs
about 1,000 times more on 1 MB; a quadratic one about 1,000,000 times. Asserts nothing: the
unit test only guards against a rule that never ends.
"""

import time

from offsets.domain.masking import mask_text
from tests.rights.test_masking import HOSTILE_UNITS


def _best_seconds(text: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        mask_text(text)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    print(f"{'unit':<34} {'1 KB ms':>9} {'1 MB ms':>9} {'ratio':>8}")
    worst = 0.0
    for unit in HOSTILE_UNITS:
        small = (unit * (1_000 // len(unit) + 1))[:1_000]
        large = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]
        small_seconds = _best_seconds(small, runs=20)
        large_seconds = _best_seconds(large, runs=3)
        ratio = large_seconds / small_seconds
        worst = max(worst, ratio)
        print(f"{unit!r:<34.34} {small_seconds * 1e3:9.3f} {large_seconds * 1e3:9.1f} {ratio:8.0f}")
    print(f"worst ratio 1 MB / 1 KB: {worst:.0f} (linear: ~1,000; quadratic: ~1,000,000)")


if __name__ == "__main__":
    main()
