"""Interleaved timing shared by the benchmarks: every system in one process, round after round."""

import statistics
import time


def measure(found, batches, rounds):
    """name -> median seconds to encode all `batches`, for each `name -> encode` in `found`."""
    timings = {name: [] for name in found}
    for encode in found.values():
        encode(batches[0])  # trace and warm up
    for _ in range(rounds):
        for name, encode in found.items():
            start = time.perf_counter()
            for batch in batches:
                encode(batch)
            timings[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in timings.items()}
