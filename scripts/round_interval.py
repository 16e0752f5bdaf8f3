"""The matrix's interval for the benchmark scripts (docs/statistics.md; the Rust original is
trtmc_core::intervals): the median of per-round values with its distribution-free interval, the k-th
smallest and k-th largest value, k the largest whose binomial coverage reaches the confidence."""
import math
import statistics


def coverage(n, k):
    return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2 ** n


def median_interval(values, confidence=0.95):
    """(median, low, high, coverage) of per-round values; fewer than 6 rounds cannot reach 95 %."""
    v = sorted(values)
    n = len(v)
    k = 1
    while 2 * (k + 1) <= n and coverage(n, k + 1) >= confidence:
        k += 1
    return statistics.median(v), v[k - 1], v[n - k], coverage(n, k)


def describe(ratios, confidence=0.95):
    m, lo, hi, cov = median_interval(ratios, confidence)
    trust = "" if cov >= confidence else f", only {cov:.1%} coverage: too few rounds"
    return f"{m:.3f} [{lo:.3f}, {hi:.3f}]{trust}"
