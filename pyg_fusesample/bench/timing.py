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


def warm_up_device(device: torch.device, seconds: float = 2.0) -> None:
    """Keeps a CUDA device busy with matrix products for ``seconds`` before
    anything is timed. An idle GPU runs at a low clock and takes a while to
    raise it; in call37 (an H200, benchmarks started right after the build)
    the first fan-out of the loader sweep ran up to 1.6x slower per batch
    than the next, larger one, which the ramp would explain. No-op on the
    CPU."""
    if device.type != 'cuda':
        return
    a = torch.randn(4096, 4096, device=device)
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize(device)
