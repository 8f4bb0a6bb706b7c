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
import weakref

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'tests'))
from test_cuda_sampler import gpu_loader_data  # noqa: E402

from pyg_fusesample import FusedNeighborLoader  # noqa: E402

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
        for holder in gc.get_referrers(ref()) if ref() is not None else []:
            print(f'  held by {type(holder).__name__}: {str(holder)[:200]}',
                  flush=True)
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
