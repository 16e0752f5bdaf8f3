# Sourced by the scripts/bench-analyze*.sh benchmarks, with $repo set: the large engine they build
# from the fixtures (COPIES copies of the ResNet18 TREx engine), the rounds (RUNS) and the rest
# before each timed run (SETTLE_S).
fixtures="${TRTMC_FIXTURES:-$repo/tests/fixtures}"
copies="${COPIES:-400}"
runs="${RUNS:-5}"
settle="${SETTLE_S:-1}"
