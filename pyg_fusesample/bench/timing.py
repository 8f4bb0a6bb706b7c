"""Timers that are honest on both devices: either a CUDA device is
synchronised before each host clock read, so asynchronous work is counted
where it runs (:func:`timed_calls`), or CUDA events time each call's own
device work (:func:`event_timed_calls`), or nothing waits and CUDA events
time the device's period per call (:func:`pipelined_periods`)."""
import statistics
import time
from typing import Callable, Dict, List

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


def event_timed_calls(fn: Callable[[], object], repeats: int, warmup: int,
                      device: torch.device) -> List[float]:
    """``warmup`` untimed calls, then the times (ms) of ``repeats`` calls:
    CUDA events around each call on a GPU, ``time.perf_counter`` on a
    CPU."""
    for _ in range(warmup):
        fn()
    if device.type == 'cuda':
        torch.cuda.synchronize(device)
    times = []
    for _ in range(repeats):
        if device.type == 'cuda':
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def pipelined_periods(fn: Callable[[], object], steps: int, warmup: int,
                      device: torch.device) -> List[float]:
    """Calls ``fn`` ``warmup + steps + 1`` times with no host synchronisation
    in between; returns the ``steps`` periods (ms) between the completions of
    consecutive calls' device work: CUDA events recorded after each call
    (host clock reads on the CPU). This is the step time of a training loop
    that never waits for the GPU: the device's time per step while the host
    keeps ahead of it, plus the idle time when the host falls behind."""
    n = warmup + steps + 1
    if device.type != 'cuda':
        stamps = []
        for _ in range(n):
            fn()
            stamps.append(time.perf_counter())
        return [(b - a) * 1e3 for a, b in zip(stamps[warmup:],
                                              stamps[warmup + 1:])]
    stream = torch.cuda.current_stream(device)
    events = []
    for _ in range(n):
        fn()
        event = torch.cuda.Event(enable_timing=True)
        event.record(stream)
        events.append(event)
    stream.synchronize()
    return [a.elapsed_time(b) for a, b in zip(events[warmup:],
                                              events[warmup + 1:])]


def peak_memory_start(device: torch.device) -> float:
    """Resets a CUDA device's peak-memory statistic (after synchronising)
    and returns the MiB allocated now; NaN on the CPU."""
    if device.type != 'cuda':
        return float('nan')
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    return torch.cuda.memory_allocated(device) / 2**20


def peak_memory_columns(device: torch.device, before: float) -> Dict[str, str]:
    """``peak_mem_mb`` (the peak since :func:`peak_memory_start`) and
    ``transient_mem_mb`` (that peak less ``before``, what it returned) of a
    row; nothing on the CPU."""
    if device.type != 'cuda':
        return {}
    peak = torch.cuda.max_memory_allocated(device) / 2**20
    return {'peak_mem_mb': f'{peak:.1f}',
            'transient_mem_mb': f'{peak - before:.1f}'}


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
