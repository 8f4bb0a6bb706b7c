"""Batches prepared one ahead on a CUDA stream of their own.

A link batch needs host reads of device values (PyG's ``edge_sample`` takes
``unique`` of the seed nodes, and the sampler reads its sizes). On the
training stream each read would wait for the training step enqueued before
it, leaving the GPU idle while the host assembles the batch. Prepared on a
side stream, a read waits only for sampling work, so the next batch is built
while the previous training step runs. The consumer's stream waits for the
batch's event before using it, and every tensor of the batch is recorded on
the consumer's stream, so the allocator keeps it until that stream is done.
"""
from typing import Callable, Dict, Hashable, Iterator, Tuple

import torch
from torch import Tensor


def record_on(value, stream: torch.cuda.Stream):
    r"""Records every CUDA tensor of :obj:`value` -- a tensor, a PyG batch
    (its stores), or lists, tuples and dicts of them (a layer-wise batch's
    ``adjs``) -- on :obj:`stream`: the allocator then keeps their memory
    until the work enqueued there so far is done."""
    if isinstance(value, Tensor):
        if value.is_cuda:
            value.record_stream(stream)
    elif hasattr(value, 'stores'):
        for store in value.stores:
            record_on(dict(store.items()), stream)
    elif isinstance(value, dict):
        for v in value.values():
            record_on(v, stream)
    elif isinstance(value, (list, tuple)):
        for v in value:
            record_on(v, stream)


def stamped(batch, stream: torch.cuda.Stream):
    r"""``(batch, event)``: an event recorded on :obj:`stream` after the
    work that made :obj:`batch` there."""
    event = torch.cuda.Event()
    event.record(stream)
    return batch, event


def hand_over(stamped_batch, consumer: torch.cuda.Stream):
    r"""The batch of a :func:`stamped` pair, made ready for
    :obj:`consumer`: the stream waits for its event, and its tensors are
    recorded there (the module's rule)."""
    batch, event = stamped_batch
    consumer.wait_event(event)
    record_on(batch, consumer)
    return batch


# Side streams kept across epochs and loaders, by (device, its user's key):
# the caching allocator keeps freed blocks for the stream they were used on,
# so a new stream each epoch (PyTorch hands out up to 32 in turn) would
# leave the blocks cached for the previous epochs' streams unused. Users of
# one key at once (loaders iterated together) share its stream: their work
# on it runs in turn.
_KEPT_STREAMS: Dict[Tuple[torch.device, Hashable], 'torch.cuda.Stream'] = {}


def kept_stream(key: Hashable, device: torch.device) -> 'torch.cuda.Stream':
    r"""The side stream kept for :obj:`key` on CUDA :obj:`device` (made
    on first use; ``'cuda'`` means the current device)."""
    device = torch.device(device)
    if device.index is None:
        device = torch.device('cuda', torch.cuda.current_device())
    stream = _KEPT_STREAMS.get((device, key))
    if stream is None:
        stream = _KEPT_STREAMS[(device, key)] = torch.cuda.Stream(device)
    return stream


_END = object()  # (the items' end: any item, even None, may be a batch's)


class SideStreamIterator:
    r"""Yields ``make(item)`` for every item of :obj:`items`, each made on a
    side stream while the caller works on the previous one. The side stream
    starts after everything the caller's stream has enqueued (the inputs'
    last writes), and never waits for it again: the stream kept for
    :obj:`key` (:func:`kept_stream`). On the CPU (no streams) the items are
    simply made one ahead, in the caller's thread."""
    def __init__(self, items: Iterator, make: Callable, device: torch.device,
                 key: Hashable = 'one ahead'):
        self.items = items
        self.make = make
        self.consumer = self.stream = None
        if device.type == 'cuda':
            self.consumer = torch.cuda.current_stream(device)
            self.stream = kept_stream(key, device)
            self.stream.wait_stream(self.consumer)
        self.ready = self._prepare()

    def __iter__(self):
        return self

    def _prepare(self):
        item = next(self.items, _END)
        if item is _END:
            return _END
        if self.stream is None:
            return self.make(item)
        with torch.cuda.stream(self.stream):
            return stamped(self.make(item), self.stream)

    def __next__(self):
        if self.ready is _END:
            raise StopIteration
        batch = self.ready if self.stream is None else hand_over(
            self.ready, self.consumer)
        # The next batch is built now, while the GPU still runs the step the
        # caller enqueued after the previous batch.
        self.ready = self._prepare()
        return batch
