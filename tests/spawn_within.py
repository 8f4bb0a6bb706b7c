"""``mp.spawn`` with a deadline, for the tests that start process groups.

A worker that never ends (a collective its peers never join, or a deadlock
at exit: DDP's reducer freed after ``destroy_process_group`` joins gloo's
threads with the GIL held while one of them waits for it) held CI's whole
run until its 90-minute limit once. Here such a test fails after
``seconds``: every worker still alive first writes the Python stack of each
of its threads to stderr (``faulthandler`` on SIGUSR1, which it dumps from
the signal handler, without the GIL), then is killed.
"""
import faulthandler
import os
import signal
import time

import torch.multiprocessing as mp

DEADLINE_S = 300  # a case takes 2-10 s on a 2-core CPU machine


def _traced(index, fn, *args):
    # (module-level: the spawned process imports it by name)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    fn(index, *args)


def spawn_within(fn, args=(), nprocs=1, seconds=DEADLINE_S):
    r"""Runs ``fn(i, *args)`` in :obj:`nprocs` spawned processes as
    ``mp.spawn`` does (a worker's error raised here, the others ended), but
    raises :class:`TimeoutError` once :obj:`seconds` have passed with a
    worker still running."""
    context = mp.start_processes(_traced, args=(fn, ) + tuple(args),
                                 nprocs=nprocs, join=False)
    deadline = time.monotonic() + seconds
    while not context.join(timeout=max(0.0, deadline - time.monotonic())):
        if time.monotonic() < deadline:
            continue  # (one worker ended; the others still may)
        alive = [i for i, p in enumerate(context.processes) if p.is_alive()]
        for i in alive:
            try:
                os.kill(context.processes[i].pid, signal.SIGUSR1)
            except ProcessLookupError:  # (it ended meanwhile)
                pass
        time.sleep(1.0)  # (their stacks written)
        for i in alive:
            context.processes[i].kill()
            context.processes[i].join()
        raise TimeoutError(f"{getattr(fn, '__name__', fn)}: workers {alive} "
                           f"of {nprocs} still running after {seconds} s "
                           f"(their threads' stacks are in the captured "
                           f"stderr above)")
