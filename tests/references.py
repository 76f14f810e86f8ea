"""Independent reference implementations of the statistics whose production code calls scipy.

`pearson`, `spearman` (metrics/agreement.py), `kendall_tau_b` (metrics/stats.py), `mann_whitney_u`
(metrics/trustgpt.py) and `kruskal_p` (metrics/scorer_bias.py) call scipy's pearsonr, rankdata, kendalltau,
mannwhitneyu and kruskal; comparing them with those same functions would test scipy against itself. These are
written from the textbook definitions instead (pair counts, average ranks, the exact null distribution by
recursion), slow and plain, for the tests to agree with. Only distribution tails (Student's t, the normal,
chi-squared) come from scipy.stats, which the code under test does not call.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from scipy.stats import chi2, norm, t


def average_ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1; tied values share the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def pearson_r_p(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Pearson's r from centred sums, and its two-sided p from Student's t with n - 2 degrees of freedom."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx, syy = sum((a - mx) ** 2 for a in x), sum((b - my) ** 2 for b in y)
    r = max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))
    if abs(r) == 1.0:
        return r, 0.0
    statistic = r * math.sqrt((n - 2) / (1 - r * r))
    return r, float(2 * t.sf(abs(statistic), n - 2))


def spearman_r_p(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Pearson's r (and p) of the average ranks."""
    return pearson_r_p(average_ranks(x), average_ranks(y))


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """(concordant - discordant) / sqrt((n0 - ties in x) (n0 - ties in y)), over every pair of items."""
    concordant = discordant = tied_x = tied_y = pairs = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            pairs += 1
            dx, dy = x[i] - x[j], y[i] - y[j]
            tied_x += dx == 0
            tied_y += dy == 0
            if dx * dy > 0:
                concordant += 1
            elif dx * dy < 0:
                discordant += 1
    return (concordant - discordant) / math.sqrt((pairs - tied_x) * (pairs - tied_y))


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> float:
    """U of x: the pairs (a in x, b in y) with a > b, ties counting one half."""
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in x for b in y)


def orderings_by_u(m: int, n: int) -> list[int]:
    """How many of the C(m + n, m) orderings of m x's and n y's (no ties) give U = 0, 1, ..., m n: the
    coefficients of the Gaussian binomial [m + n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)."""
    coefficients = [1] + [0] * (m * n)
    for i in range(1, m + 1):
        for k in range(m * n, n + i - 1, -1):  # times (1 - q^(n+i))
            coefficients[k] -= coefficients[k - n - i]
        for k in range(i, m * n + 1):  # divided by (1 - q^i): a running sum with step i
            coefficients[k] += coefficients[k - i]
    return coefficients


def mann_whitney_exact_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided exact p without ties: twice P(U >= the larger of U_x, U_y), at most 1."""
    m, n = len(x), len(y)
    u = mann_whitney_u(x, y)
    larger = int(max(u, m * n - u))
    tail = sum(orderings_by_u(m, n)[larger:])
    return min(1.0, 2 * tail / math.comb(m + n, m))


def mann_whitney_normal_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided p of the normal approximation with tie correction and continuity correction (one half)."""
    m, n = len(x), len(y)
    total = m + n
    u = mann_whitney_u(x, y)
    ties = sum(c**3 - c for c in Counter([*x, *y]).values())
    sd = math.sqrt(m * n / 12 * ((total + 1) - ties / (total * (total - 1))))
    z = (max(u, m * n - u) - m * n / 2 - 0.5) / sd
    return min(1.0, float(2 * norm.sf(z)))


def kruskal_wallis_p(*samples: Sequence[float]) -> float:
    """Kruskal-Wallis H on the pooled average ranks, divided by the tie correction 1 - sum(t^3 - t) / (N^3 - N);
    p from the chi-squared tail with (groups - 1) degrees of freedom."""
    pooled = [v for sample in samples for v in sample]
    ranks = average_ranks(pooled)
    total = len(pooled)
    h, start = 0.0, 0
    for sample in samples:
        h += sum(ranks[start : start + len(sample)]) ** 2 / len(sample)
        start += len(sample)
    h = 12 / (total * (total + 1)) * h - 3 * (total + 1)
    ties = sum(c**3 - c for c in Counter(pooled).values())
    h /= 1 - ties / (total**3 - total)
    return float(chi2.sf(h, len(samples) - 1))


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """(observed agreement - chance agreement) / (1 - chance agreement), chance from each rater's own label
    frequencies."""
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    first, second = Counter(a), Counter(b)
    chance = sum(first[label] * second[label] for label in first) / (n * n)
    return (observed - chance) / (1 - chance)
