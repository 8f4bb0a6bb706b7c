"""fusesample::copy_blocks (a padded batch's per-step copies in one launch):
every pair copied as ``dst.copy_(src)`` would, on CPU and CUDA, for pairs of
mixed dtypes, sizes and alignments (16-byte moves down to bytes), empty
pairs, more pairs than one launch takes; bad inputs raise before anything
is written."""
import pytest
import torch

import pyg_fusesample  # noqa: F401  (registers the ops)

from conftest import devices

DEVICES = devices()
_copy_blocks = torch.ops.fusesample.copy_blocks


def _pairs(device, gen):
    # (dst, src) pairs: whole tensors, row blocks of 2-D tensors (as a
    # padded batch's hop blocks), odd byte offsets and sizes, empty ones
    src = [torch.randn(37, 128, generator=gen),
           torch.randint(0, 9, (1000,), generator=gen),
           torch.randn(5, 3, generator=gen).to(torch.bfloat16),
           torch.randint(0, 100, (13,), generator=gen).to(torch.uint8),
           torch.empty(0, 4)]
    src = [t.to(device) for t in src]
    src.append(src[0][3:20])  # a row block at a 16-byte-aligned offset
    src.append(src[3][1:8])  # odd address and size: byte moves
    dst = [torch.full_like(t, 7) for t in src]
    dst[0] = torch.zeros(60, 128, device=device)[5:42]  # a block of rows
    return dst, src


@pytest.mark.parametrize('device', DEVICES)
def test_copies_every_pair(device):
    gen = torch.Generator().manual_seed(0)
    dst, src = _pairs(device, gen)
    _copy_blocks(dst, src)
    for d, s in zip(dst, src):
        assert torch.equal(d, s)


@pytest.mark.parametrize('device', DEVICES)
def test_more_pairs_than_one_launch_takes(device):
    src = [torch.arange(i, 3 * i + 5, device=device) for i in range(130)]
    dst = [torch.zeros_like(t) for t in src]
    _copy_blocks(dst, src)
    assert all(torch.equal(d, s) for d, s in zip(dst, src))


@pytest.mark.parametrize('device', DEVICES)
def test_alignment_of_one_pair_sets_the_move_not_the_result(device):
    # a byte-aligned pair among aligned ones: every pair still exact
    big = torch.randn(4096, device=device)
    odd = torch.arange(50, dtype=torch.uint8, device=device)[3:40]
    dst = [torch.empty_like(big), torch.empty_like(odd)]
    _copy_blocks(dst, [big, odd])
    assert torch.equal(dst[0], big) and torch.equal(dst[1], odd)


@pytest.mark.parametrize('device', DEVICES)
def test_bad_inputs_raise_before_writing(device):
    a = torch.zeros(4, device=device)
    b = torch.ones(4, device=device)
    with pytest.raises(RuntimeError, match='same length'):
        _copy_blocks([a], [b, b])
    with pytest.raises(RuntimeError, match='is Long but'):
        _copy_blocks([a, a.long()], [b, b])
    with pytest.raises(RuntimeError, match='elements'):
        _copy_blocks([a, torch.zeros(3, device=device)], [b, b[:2]])
    with pytest.raises(RuntimeError, match='contiguous'):
        _copy_blocks([a, torch.zeros(4, 2, device=device).t()],
                     [b, torch.ones(2, 4, device=device)])
    assert torch.equal(a, torch.zeros(4, device=device))  # nothing written


@pytest.mark.cuda
def test_pairs_on_two_devices_raise():
    a = torch.zeros(4, device='cuda')
    with pytest.raises(RuntimeError, match='one device'):
        _copy_blocks([a], [torch.ones(4)])


_copy_row_blocks = torch.ops.fusesample.copy_row_blocks


@pytest.mark.parametrize('device', DEVICES)
def test_row_blocks_copy_as_views_would(device):
    # hop blocks of 2-D and 1-D tensors, a 0-d tensor, empty blocks, an odd
    # byte width: each block as d.narrow(...).copy_(s.narrow(...))
    gen = torch.Generator().manual_seed(0)
    src = [torch.randn(40, 100, generator=gen),
           torch.randint(0, 9, (40, ), generator=gen),
           torch.randint(0, 9, (40, 3), generator=gen).to(torch.uint8),
           torch.tensor(5)]
    src = [t.to(device) for t in src]
    dst = [torch.zeros((60, ) + t.shape[1:], dtype=t.dtype, device=device)
           if t.dim() else torch.zeros_like(t) for t in src]
    hops = [(0, 0, 7), (10, 7, 20), (35, 27, 13), (59, 40, 0)]
    blocks = [x for i in range(3) for h in hops for x in (i, *h)]
    blocks += [3, 0, 0, 1]
    expected = [d.clone() for d in dst]
    for i in range(3):
        for d0, s0, n in hops:
            expected[i][d0:d0 + n] = src[i][s0:s0 + n]
    expected[3] = src[3].clone()
    _copy_row_blocks(dst, src, blocks)
    for d, e in zip(dst, expected):
        assert torch.equal(d, e)


@pytest.mark.parametrize('device', DEVICES)
def test_row_blocks_bad_inputs_raise_before_writing(device):
    a = torch.zeros(6, 4, device=device)
    b = torch.ones(5, 4, device=device)
    with pytest.raises(RuntimeError, match='quadruples'):
        _copy_row_blocks([a], [b], [0, 0, 0])
    with pytest.raises(RuntimeError, match='names pair 1 of 1'):
        _copy_row_blocks([a], [b], [1, 0, 0, 1])
    with pytest.raises(RuntimeError, match='must lie in'):
        _copy_row_blocks([a], [b], [0, 0, 0, 1, 0, 0, 2, 4])  # src 2:6 of 5
    with pytest.raises(RuntimeError, match='must lie in'):
        _copy_row_blocks([a], [b], [0, 4, 0, 3])  # dst 4:7 of 6
    with pytest.raises(RuntimeError, match='must lie in'):
        _copy_row_blocks([a], [b], [0, 0, 0, -1])
    with pytest.raises(RuntimeError, match='one width'):
        _copy_row_blocks([a], [torch.ones(5, 3, device=device)], [0, 0, 0, 1])
    with pytest.raises(RuntimeError, match='is Long but'):
        _copy_row_blocks([a.long()], [b], [0, 0, 0, 1])
    assert not a.any()  # nothing written
