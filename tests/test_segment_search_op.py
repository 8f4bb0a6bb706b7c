"""fusesample::segment_search against torch.searchsorted run by run: both
bounds, int32 and int64, empty runs, runs at the array's ends, repeated
values; opcheck; bad inputs (CPU checks every run's bounds)."""
import pytest
import torch

from conftest import devices
from pyg_fusesample.ops import segment_search


def runs(seed=0, num_runs=40, dtype=torch.long):
    # Sorted runs of lengths 0..50 with repeats, laid end to end.
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 51, (num_runs, ), generator=g)
    lengths[:3] = torch.tensor([0, 1, 50])
    parts = [torch.randint(0, 30, (int(n), ), generator=g).sort().values
             for n in lengths]
    first = torch.cat([torch.zeros(1, dtype=torch.long),
                       lengths.cumsum(0)[:-1]])
    return torch.cat(parts).to(dtype), first, lengths


def reference(sorted, first, length, value, upper):
    out = []
    for f, n, v in zip(first.tolist(), length.tolist(), value.tolist()):
        run = sorted[f:f + n]
        out.append(f + int(torch.searchsorted(run, torch.tensor(
            [v], dtype=run.dtype), right=upper)))
    return torch.tensor(out, dtype=torch.long)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype', [torch.long, torch.int])
@pytest.mark.parametrize('upper', [False, True])
def test_matches_searchsorted_per_run(device, dtype, upper):
    sorted, first, length = runs(dtype=dtype)
    g = torch.Generator().manual_seed(1)
    # every run queried 8 times, values below, inside and above its range
    q = torch.arange(first.numel()).repeat_interleave(8)
    value = torch.randint(-2, 33, (q.numel(), ), generator=g).to(dtype)
    want = reference(sorted, first[q], length[q], value, upper)
    got = segment_search(sorted.to(device), first[q].to(device),
                         length[q].to(device), value.to(device), upper)
    assert got.dtype == torch.long and torch.equal(got.cpu(), want)


@pytest.mark.parametrize('device', devices())
def test_bounds_count_copies_and_empty_queries(device):
    sorted = torch.tensor([1, 3, 3, 3, 7, 2, 2, 9], device=device)
    first = torch.tensor([0, 0, 5, 5, 8], device=device)
    length = torch.tensor([5, 5, 3, 3, 0], device=device)
    value = torch.tensor([3, 8, 2, 1, 4], device=device)
    lo = segment_search(sorted, first, length, value)
    hi = segment_search(sorted, first, length, value, upper=True)
    assert lo.tolist() == [1, 5, 5, 5, 8] and hi.tolist() == [4, 5, 7, 5, 8]
    none = torch.empty(0, dtype=torch.long, device=device)
    assert segment_search(sorted, none, none, none).numel() == 0


def test_opcheck():
    sorted, first, length = runs()
    value = torch.randint(0, 30, (first.numel(), ))
    for upper in (False, True):
        torch.library.opcheck(torch.ops.fusesample.segment_search.default,
                              (sorted, first, length, value, upper))


def test_bad_inputs():
    sorted, first, length = runs()
    value = torch.zeros_like(first)
    with pytest.raises(RuntimeError, match="'value' must have 'sorted''s "
                       "dtype"):
        segment_search(sorted, first, length, value.int())
    with pytest.raises(RuntimeError, match="one entry per query"):
        segment_search(sorted, first, length[:-1], value)
    with pytest.raises(RuntimeError, match="'first' must be Long"):
        segment_search(sorted, first.int(), length, value)
    with pytest.raises(RuntimeError, match="'sorted' must be int64 or int32"):
        segment_search(sorted.float(), first, length, value.float())
    with pytest.raises(RuntimeError, match="outside 'sorted'"):
        segment_search(sorted, first + 1000, length, value)
    with pytest.raises(RuntimeError, match="outside 'sorted'"):
        segment_search(sorted, first, -length - 1, value)
