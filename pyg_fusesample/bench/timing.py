"""Timers that are honest on both devices: a CUDA device is synchronised
before each host clock read, so asynchronous work is counted where it runs."""
import statistics
import time
from typing import Callable, List

import torch


def timed_calls(fn: Callable[[], object], steps: int, warmup: int,
                device: torch.device) -> List[float]:
    """Calls ``fn`` ``warmup + steps`` times; returns the last ``steps``
    durations in milliseconds."""
    sync = (lambda: torch.cuda.synchronize(device)) \
        if device.type == 'cuda' else (lambda: None)
    times = []
    for i in range(warmup + steps):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def median(xs: List[float]) -> float:
    return statistics.median(xs) if xs else float('nan')


def median_ms(fn: Callable[[], object], steps: int, warmup: int,
              device: torch.device) -> float:
    """Median of :func:`timed_calls`, in milliseconds."""
    return median(timed_calls(fn, steps, warmup, device))
