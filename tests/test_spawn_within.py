"""The deadline of the process-group tests' spawner (spawn_within.py): a
worker that never ends fails its test in bounded time, with its threads'
stacks written; a worker's error is raised as mp.spawn raises it."""
import threading
import time

import pytest
from torch.multiprocessing import ProcessRaisedException

from spawn_within import spawn_within


def _hangs(index, seconds):
    # (a second thread too: every thread's stack is written)
    threading.Thread(target=time.sleep, args=(seconds, ), daemon=True,
                     name='sleeper').start()
    time.sleep(seconds)


def _fails(index):
    if index == 1:
        raise ValueError('worker 1 fails')
    time.sleep(60)


def test_a_hanging_worker_fails_within_the_deadline(capfd):
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r'workers \[0, 1\] of 2'):
        spawn_within(_hangs, args=(600, ), nprocs=2, seconds=5)
    assert time.monotonic() - start < 60
    err = capfd.readouterr().err
    assert 'sleeper' in err or 'Thread 0x' in err
    assert '_hangs' in err


def test_a_worker_error_is_raised_and_ends_the_others():
    start = time.monotonic()
    with pytest.raises(ProcessRaisedException, match='worker 1 fails'):
        spawn_within(_fails, nprocs=2, seconds=120)
    assert time.monotonic() - start < 50


def test_workers_that_end_return():
    spawn_within(_hangs, args=(0.1, ), nprocs=2, seconds=60)
