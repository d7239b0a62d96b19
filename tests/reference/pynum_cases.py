#!/usr/bin/env python3
"""Record what Python 3.11 computes for the arithmetic of ELSPETH 0.7.1's
statistics aggregations, as data for tests/unit/test_plugins_pynum.c.

    python3 tests/reference/pynum_cases.py > tests/fixtures/pynum_cases.txt

One line per case: the values (`i<int>` or `f<repr of a float>`), then
`|`, then statistics.stdev, sum(), statistics.median (each `i`/`f` plus
repr), sum()/len() and round(float(sum())/7, 4). The values are random
(seeded): small and large ints (sums near the 64-bit range), decimals,
tiny and huge floats, signed zeros, scores near 0.7, and mixes of ints
and floats. Run it with the Python the reference ran on (3.11: sum() is
plain left-to-right there; 3.12 compensates).
"""
import random
import statistics
import sys

assert sys.version_info[:2] == (3, 11), "record with Python 3.11, the reference's"
random.seed(71)


def one(kind, n):
    if kind < 0.25:
        return random.randint(-10**6, 10**6)
    if kind < 0.32:
        return random.randint(-2**62, 2**62) // n
    if kind < 0.6:
        return round(random.uniform(-1000, 1000), random.randint(0, 4))
    if kind < 0.7:
        return random.choice([random.randint(-100, 100), -0.0, 0.0,
                              random.uniform(-1e-3, 1e-3) * 10**random.randint(-300, 300)])
    if kind < 0.85:
        return random.choice([random.randint(0, 1000), round(random.uniform(0, 1000), 2)])
    return random.gauss(0.7, 0.05)


def fmt(x):
    return ("i%d" % x) if type(x) is int else ("f" + repr(float(x)))


for _ in range(400):
    n = random.randint(2, 24)
    kind = random.random()
    vals = [one(kind, n) for _ in range(n)]
    s = sum(vals)
    print(" ".join(fmt(v) for v in vals), "|", fmt(statistics.stdev(vals)), fmt(s),
          fmt(statistics.median(vals)), fmt(s / len(vals)), fmt(round(float(s) / 7, 4)))
