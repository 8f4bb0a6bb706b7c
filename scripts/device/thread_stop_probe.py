"""Why does an abandoned prefetch='thread' epoch's thread outlive its
iterator under compute-sanitizer (call97) but not in plain runs?

The test's scenario, outside pytest, a few times: one batch taken, the
iterator dropped. Prints whether the iterator was collected (a weak
reference), whether its producer saw the stop, how long the thread took to
end, and, if it is still alive after the wait, every thread's Python stack
and what still refers to the iterator.

    python scripts/device/thread_stop_probe.py
    compute-sanitizer --tool memcheck python scripts/device/thread_stop_probe.py
"""
import faulthandler
import gc
import os
import sys
import time
import types
import weakref

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'tests'))
from test_cuda_sampler import gpu_loader_data  # noqa: E402

from pyg_fusesample import FusedNeighborLoader  # noqa: E402



def describe(obj) -> str:
    if isinstance(obj, types.FrameType):
        return f'frame {obj.f_code.co_filename}:{obj.f_lineno} {obj.f_code.co_name}'
    if isinstance(obj, types.TracebackType):
        names = []
        while obj is not None:
            names.append(f'{obj.tb_frame.f_code.co_name}:{obj.tb_lineno}')
            obj = obj.tb_next
        return 'traceback ' + ' > '.join(names)
    if isinstance(obj, BaseException):
        return f'exception {obj!r}'
    return f'{type(obj).__name__} {str(obj)[:150]}'


def show_holders(obj, depth, indent='  ', ignore=None):
    # What refers to obj, and to those, `depth` levels up (the probe's own
    # frames, globals and referrer lists left out).
    ignore = {id(globals())} if ignore is None else ignore
    ignore.add(id(sys._getframe()))
    holders = gc.get_referrers(obj)
    ignore.add(id(holders))
    for i in range(len(holders)):  # (no iterator object to show up)
        holder = holders[i]
        if id(holder) in ignore or holder is sys.modules or (
                isinstance(holder, types.FrameType)
                and holder.f_code.co_filename == __file__):
            continue
        ignore.add(id(holder))
        print(f'{indent}held by {describe(holder)}', flush=True)
        if depth > 1 and not isinstance(holder, types.ModuleType):
            show_holders(holder, depth - 1, indent + '  ', ignore)


WAIT = float(os.environ.get('THREAD_STOP_WAIT', 30))
data = gpu_loader_data(labels=True)
for trial in range(3):
    loader = FusedNeighborLoader(data, num_neighbors=[10, 5], batch_size=100,
                                 shuffle=True, seed=3, prefetch='thread',
                                 fused=trial != 1)
    it = iter(loader)
    next(it)
    thread, producer, ref = it.thread, it.producer, weakref.ref(it)
    del it
    print(f'trial {trial}: collected {ref() is None}, stop set '
          f'{producer.stop.is_set()}, queued {producer.queue.qsize()}',
          flush=True)
    if ref() is not None:
        gc.collect()
        print(f'  after gc.collect(): collected {ref() is None}', flush=True)
        if ref() is not None:
            show_holders(ref(), 5)
    t0 = time.perf_counter()
    thread.join(WAIT)
    print(f'  thread alive {thread.is_alive()} after '
          f'{time.perf_counter() - t0:.2f} s', flush=True)
    if thread.is_alive():
        faulthandler.dump_traceback(all_threads=True)
        producer.stop.set()
        thread.join(WAIT)
        print(f'  after stop.set(): alive {thread.is_alive()}', flush=True)
torch.cuda.synchronize()
print('done', flush=True)
