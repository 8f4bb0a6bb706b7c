"""Batches assembled on a background thread, handed over through a queue.

A training step bound by the host's launch rate cannot hide the host work
of assembling a batch (sampling launches, size read-backs, gathers, the
Data) behind GPU work, so that work moves off the training thread: PyTorch
drops the GIL inside every op and for ``backward()``, and the thread
assembles batches in those gaps. Its waits for device values block only it.
The thread issues its work on a CUDA stream of its own (``prefetched``, which
on a GPU runs two such threads, each making every other batch of the epoch)
or on the stream given to it. On its own stream the thread's reads of device values
(a sampler's sizes) wait only for sampling work, not for the training steps
the consumer enqueued meanwhile: on the consumer's stream every such read
waited for them, which serialised the batches' host work with the GPU (a
LADIES batch makes about 50 such reads). A batch made on the side stream is
handed over with an event the consumer's stream waits for, and its tensors
are recorded on the consumer's stream (loader/side_stream.py's rule). The
loaders draw an epoch's order and RNG keys in the consumer's thread before
the thread starts, so the batches are those made without it.

Batches whose making is collective (a partitioned graph's: every rank's
thread exchanges with the others') must stop at the same batch on every
rank, or one rank's thread waits forever in an exchange its peers never
join. Their producers (``collective=True``) never stop between batches: a
stopped one still hands over every batch its queue has room for and stops
only at a full queue. The consumers of all ranks took the same batches
(iteration is collective), so every rank's thread stops after the same
batch, whatever the threads' timing; closing costs at most a queue's depth
of batches more.

A thread still running when the interpreter exits (an iterator kept alive
to the end, as a benchmark's endless cycle does) is stopped and joined by
an ``atexit`` hook: a daemon thread that finalisation catches inside a
PyTorch op is unwound through C++ frames that cannot unwind, and the
process aborts ("terminate called without an active exception").
"""
import atexit
import contextlib
import queue
import threading
import weakref
from typing import Callable, Iterator, List, Optional

import torch

from .side_stream import hand_over, kept_stream, stamped


class _Producer:
    # The state a background thread shares with BackgroundIterator. The
    # thread holds only this object, so dropping the iterator (an epoch
    # abandoned half-way) lets it be collected, and its __del__ stops the
    # thread.
    END = object()

    def __init__(self, batches: Iterator, depth: int, handoff: bool,
                 collective: bool = False):
        self.batches = batches
        self.queue = queue.Queue(maxsize=depth)
        self.stop = threading.Event()
        # On a side stream each batch travels with the event its consumer
        # waits for.
        self.handoff = handoff
        # (stops at a full queue only: see the module's docstring)
        self.collective = collective

    def run(self, stream: Optional['torch.cuda.Stream']):
        try:
            with (torch.cuda.stream(stream) if stream is not None
                  else contextlib.nullcontext()):
                for batch in self.batches:
                    if self.handoff:
                        batch = stamped(batch, stream)
                    if not self.put(batch) or (self.stop.is_set()
                                               and not self.collective):
                        return
        except BaseException as error:  # re-raised by the consumer, in order
            self.put(error)
        else:
            self.put(self.END)

    def put(self, item) -> bool:
        # (a queue with room takes the item even after a stop: a collective
        # producer's stop point is then its queue's, the same on every rank)
        while True:
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                if self.stop.is_set():
                    return False


class BackgroundIterator:
    r"""Yields the items of :obj:`batches`, which a daemon thread computes
    up to :obj:`depth` ahead (see the module's docstring); or, from
    :meth:`start_strided`, the items of several threads in turn."""
    depth = 2

    @classmethod
    def start(cls, batches: Iterator, stream: Optional['torch.cuda.Stream'],
              num_batches: int, name: str,
              consumer: Optional['torch.cuda.Stream'] = None,
              collective: bool = False) -> 'BackgroundIterator':
        r"""With :obj:`consumer`, :obj:`stream` is a side stream: each batch
        reaches the caller once :obj:`consumer` waits for it, its tensors
        recorded there. :obj:`collective`: making a batch is a collective
        of the ranks (see the module's docstring)."""
        return cls.start_strided([batches], [stream], num_batches, name,
                                 consumer, collective)

    @classmethod
    def start_strided(cls, parts: List[Iterator],
                      streams: List[Optional['torch.cuda.Stream']],
                      num_batches: int, name: str,
                      consumer: Optional['torch.cuda.Stream'] = None,
                      collective: bool = False) -> 'BackgroundIterator':
        r"""Thread :obj:`i` computes :obj:`parts[i]` on :obj:`streams[i]`:
        the batches :obj:`i`, :obj:`i + W`, :obj:`i + 2W`, ... of the
        epoch for :obj:`W` threads, which the iterator yields in turn, so
        in the epoch's order. Each thread keeps at most
        ``max(1, depth // W)`` batches ready."""
        # Everything that calls into PyTorch happens before the iterator
        # exists, and its __init__ only stores. Under compute-sanitizer
        # memcheck something kept a frame of the epoch's setup alive, and
        # through its f_back the frame that had created the iterator, so
        # dropping the iterator did not stop the thread (call100). Now no
        # frame of these calls refers to the iterator.
        depth = max(1, cls.depth // len(parts))
        producers = [_Producer(part, depth, consumer is not None, collective)
                     for part in parts]
        threads = [_BatchThread(producer, stream,
                                name if len(parts) == 1 else f'{name}-{i}')
                   for i, (producer, stream)
                   in enumerate(zip(producers, streams))]
        for thread in threads:
            thread.start()
            _THREADS.add(thread)
        return cls(producers, threads, num_batches, consumer)

    def __init__(self, producers: List[_Producer],
                 threads: List[threading.Thread], num_batches: int,
                 consumer: Optional['torch.cuda.Stream'] = None):
        self.producers, self.threads = producers, threads
        self.consumer = consumer
        self.num_batches = num_batches
        self.taken = 0
        self.done = False

    @property
    def producer(self) -> _Producer:
        r"""The first thread's producer (the only one but for
        :meth:`start_strided`)."""
        return self.producers[0]

    @property
    def thread(self) -> threading.Thread:
        r"""The first thread (the only one but for :meth:`start_strided`)."""
        return self.threads[0]

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return self.num_batches

    def __next__(self):
        if self.done:
            raise StopIteration
        producer = self.producers[self.taken % len(self.producers)]
        item = producer.queue.get()
        if item is _Producer.END or isinstance(item, BaseException):
            # The epoch's end (the threads' parts partition it: the first
            # END comes after its last batch), or a batch's error, raised
            # in its place.
            self.close()
            if isinstance(item, BaseException):
                raise item
            raise StopIteration
        self.taken += 1
        return item if self.consumer is None else hand_over(item,
                                                            self.consumer)

    def close(self):
        r"""Stops the threads (an epoch left before its end)."""
        self.done = True
        for producer in self.producers:
            producer.stop.set()
        for thread in self.threads:
            thread.join()

    def __del__(self):
        for producer in self.producers:
            producer.stop.set()


class _BatchThread(threading.Thread):
    # A daemon thread that runs a producer. It holds the producer's stop
    # event apart from the producer, so that stop_all can stop it without
    # keeping the producer alive.
    def __init__(self, producer: _Producer,
                 stream: Optional['torch.cuda.Stream'], name: str):
        super().__init__(target=producer.run, args=(stream, ), daemon=True,
                         name=name)
        self.stop = producer.stop


# The threads, weakly: a thread is referenced while it runs and leaves the
# set once it has ended and nothing else holds it. The threads, not their
# producers: a thread whose iterator was dropped outlives its producer,
# freeing the producer's last batches (tensors, CUDA events) after its
# run() has returned, and an exit in that window aborted a benchmark's
# process once in two runs.
_THREADS: 'weakref.WeakSet[_BatchThread]' = weakref.WeakSet()


@atexit.register
def stop_all():
    r"""Stops and joins every background thread still running: each ends
    after the batch it is making and after freeing what it holds. Runs at
    interpreter exit (see the module's docstring)."""
    for thread in list(_THREADS):
        thread.stop.set()
        thread.join()


def check_prefetch(prefetch: Optional[bool], num_workers: int,
                   owner: str) -> Optional[bool]:
    r"""A loader's ``prefetch`` argument, checked: the thread assembles
    batches in this process, so worker processes exclude it. :obj:`None`
    (the default) stays :obj:`None` without workers and is decided by the
    graph's device when an epoch starts (:func:`prefetching`)."""
    if prefetch is None:
        return None if num_workers == 0 else False
    if prefetch and num_workers > 0:
        raise ValueError(f"{owner}: 'prefetch=True' assembles batches on a "
                         f"thread of this process: it needs 'num_workers=0'")
    return bool(prefetch)


def prefetching(prefetch: Optional[bool], device: torch.device) -> bool:
    r"""Whether an epoch is assembled on the background thread: as asked,
    or, for :obj:`None`, when the graph is on a GPU (where the thread was
    measured to win: docs/walks.md); on the CPU the thread would compete
    with the training step for the same cores."""
    return device.type == 'cuda' if prefetch is None else prefetch


# Threads that make a GPU epoch's batches: a subgraph or layer-wise batch's
# host work is mostly its sampling op's C++, which runs without the GIL (a
# LADIES batch: about 3.7 ms of host time against a 2 ms step), so a second
# thread makes batches at up to twice the rate.
GPU_THREADS = 2


def prefetched(loader: torch.utils.data.DataLoader, draw: Callable[[], List],
               make: Callable, device: torch.device) -> BackgroundIterator:
    r"""One epoch of a map-style :obj:`loader` (``num_workers=0``) whose
    batches are ``make(item)`` for each item of ``draw()``, made on
    background threads (:func:`start_threads`: one on the CPU, on a GPU
    :data:`GPU_THREADS`, thread :obj:`i` making items :obj:`i`,
    :obj:`i + W`, ...). The draws of plain iteration are made first, here,
    in the caller's thread and in its order -- DataLoader's base seed (an
    iterator of the loader, made and discarded), then ``draw()`` (the
    epoch's order and RNG keys) -- so the batches are those of plain
    iteration."""
    torch.utils.data.DataLoader.__iter__(loader)
    items = draw()
    threads = GPU_THREADS if device.type == 'cuda' else 1
    return start_threads([map(make, items[i::threads])
                          for i in range(threads)], len(items), device,
                         f'{type(loader).__name__}-prefetch')


def start_threads(parts: List[Iterator], num_batches: int,
                  device: torch.device, name: str,
                  collective: bool = False) -> BackgroundIterator:
    r"""An epoch of :obj:`num_batches` batches, thread :obj:`i` making
    those of :obj:`parts[i]` (the epoch's batches :obj:`i`, :obj:`i + W`,
    ... for :obj:`W` parts), yielded in the epoch's order. On a GPU each
    thread issues its work on a side stream of its own that starts after
    everything the caller's stream has enqueued (the inputs' last writes),
    and each batch is handed over with an event. :obj:`collective`: making
    a batch is a collective of the ranks (the module's docstring)."""
    if device.type != 'cuda':
        return BackgroundIterator.start_strided(
            parts, [None] * len(parts), num_batches, name,
            collective=collective)
    consumer = torch.cuda.current_stream(device)
    # (kept across epochs and loaders: loader/side_stream.py's kept_stream)
    streams = [kept_stream(('thread', i), device) for i in range(len(parts))]
    for stream in streams:
        stream.wait_stream(consumer)
    return BackgroundIterator.start_strided(parts, streams, num_batches, name,
                                            consumer=consumer,
                                            collective=collective)
