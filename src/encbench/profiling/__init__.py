"""CPU profiles: `perf record` around operations (profiler.py) and what the samples say: perf script parsed,
folded stacks, shares, SVG flame graphs (flame.py)."""
