"""The distributed sampler's per-hop bookkeeping ops (kernels/sampler/
dist_hop.cpp): fusesample::dist_requests, dist_reply_sizes,
dist_frontier_order and dist_relabel equal the plain tensor code they
replaced (kept here as the reference), and dist_pad_replies /
dist_unpad_replies plain loops, on random inputs with repeated seeds,
repeated sources, empty frontiers, empty hops, targets without draws and
disjoint keys with root times; on the CPU and CUDA (the same results); bad
inputs name the op and the argument."""
import pytest
import torch

from conftest import devices
from pyg_fusesample import _extension  # noqa: F401  (registers the ops)

DEVICES = devices()
ops = torch.ops.fusesample


# ----------------------------------------------------------- the references
def ref_requests(key, begin, end, N, owner_map, W, seed_time=None):
    frontier = key[begin:end] % N
    position = torch.arange(begin, end, device=key.device)
    owner = owner_map[frontier]
    perm = torch.sort(owner, stable=True).indices
    counts = torch.zeros(W, dtype=torch.long, device=key.device).index_add_(
        0, owner, torch.ones_like(owner))
    fields = [frontier[perm], position[perm]]
    if seed_time is not None:
        fields.append(seed_time[key[begin:end] // N][perm])
    return torch.stack(fields, 1), perm, counts, owner[perm]


def ref_reply_sizes(asked_counts, draw_count, owner, got_count, foreign):
    W = asked_counts.numel()
    dev = asked_counts.device
    reply = torch.zeros(W, dtype=torch.long, device=dev).index_add_(
        0, torch.repeat_interleave(asked_counts,
                                   output_size=draw_count.numel()),
        draw_count)
    coming = torch.zeros(W, dtype=torch.long, device=dev).index_add_(
        0, owner, got_count)
    return torch.cat([reply, coming, foreign.view(1).long()])


def ref_frontier_order(got, got_count, perm, begin, total):
    count = torch.empty_like(got_count)
    count[perm] = got_count
    start = torch.empty_like(got_count)
    start[perm] = torch.cumsum(got_count, 0) - got_count
    target = torch.repeat_interleave(count, output_size=total)
    index = (start - (torch.cumsum(count, 0) - count))[target] + \
        torch.arange(total, device=got.device)
    drawn = got[index]
    return drawn[:, 0], drawn[:, 1], target + begin


def ref_relabel(node, src):
    # new sources appended in order of first appearance, by a dictionary
    first = {}
    for i, v in enumerate(node.tolist()):
        first.setdefault(v, i)
    out, local = node.tolist(), []
    for v in src.tolist():
        if v not in first:
            first[v] = len(out)
            out.append(v)
        local.append(first[v])
    dev = node.device
    return (torch.tensor(out, dtype=torch.long, device=dev),
            torch.tensor(local, dtype=torch.long, device=dev),
            len(out) - node.numel())


def ref_pad_replies(count, row, edge, K):
    # request r's draws are row / edge[sum(count[:r]) : + count[r]]
    reply, at = [], 0
    for c in count.tolist():
        pad = [-1] * (K - c)
        reply.append([c] + row[at:at + c].tolist() + pad +
                     edge[at:at + c].tolist() + pad)
        at += c
    return torch.tensor(reply, dtype=torch.long,
                        device=count.device).view(len(reply), 1 + 2 * K)


def ref_unpad_replies(got, perm, begin, K):
    # reply i is frontier node perm[i]'s; its draws go out in frontier order
    by_target = dict(zip(perm.tolist(), got.tolist()))
    src, edge, col = [], [], []
    for t in sorted(by_target):
        c, rest = by_target[t][0], by_target[t][1:]
        src += rest[:c]
        edge += rest[K:K + c]
        col += [t + begin] * c
    return tuple(torch.tensor(v, dtype=torch.long, device=got.device)
                 for v in (src, edge, col))


def _randint(g, lo, hi, n):
    return torch.randint(lo, hi, (n, ), generator=g)


# ------------------------------------------------------------------ tests
@pytest.mark.parametrize('device', DEVICES)
def test_relabel_equals_first_appearance(device):
    g = torch.Generator().manual_seed(0)
    cases = [(torch.tensor([7, 7, 3]), torch.tensor([3, 9, 7, 9, 1])),
             (torch.empty(0, dtype=torch.long), _randint(g, 0, 5, 9)),
             (_randint(g, 0, 9, 4), torch.empty(0, dtype=torch.long))]
    cases += [(_randint(g, 0, 40, int(_randint(g, 0, 30, 1))),
               _randint(g, 0, 60, int(_randint(g, 0, 80, 1))))
              for _ in range(50)]
    for node, src in cases:
        node, src = node.to(device), src.to(device)
        want = ref_relabel(node, src)
        got = ops.dist_relabel(node, src)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        assert got[2] == want[2]


@pytest.mark.cuda
def test_cuda_relabel_equals_the_composite_at_scale():
    # (the CUDA kernel's hash table: many blocks, colliding probes, disjoint
    # keys of seed * N + node, negative keys; the CPU composite as the
    # reference)
    g = torch.Generator().manual_seed(2)
    N = 10 ** 9
    for K, D, hi in [(1000, 200000, 50000), (60000, 150000, 10 ** 6),
                     (1, 5, 3)]:
        node = _randint(g, 0, hi, K) + _randint(g, 0, 7, K) * N
        src = torch.cat([_randint(g, 0, hi, D) + _randint(g, 0, 7, D) * N,
                         node[:10], torch.tensor([-5, -5, -1])])
        want = ops.dist_relabel(node, src)
        got = ops.dist_relabel(node.cuda(), src.cuda())
        assert torch.equal(got[0].cpu(), want[0])
        assert torch.equal(got[1].cpu(), want[1]) and got[2] == want[2]


@pytest.mark.cuda
def test_cuda_relabel_refuses_the_tables_empty_mark():
    key = torch.tensor([3, -2 ** 63], device='cuda')
    with pytest.raises(RuntimeError, match='INT64_MIN'):
        ops.dist_relabel(key[:1], key)


@pytest.mark.parametrize('device', DEVICES)
def test_frontier_order_equals_the_reference(device):
    g = torch.Generator().manual_seed(1)
    for F in [0, 1, 5, 17, 40]:
        for _ in range(5):
            perm = torch.randperm(F, generator=g)
            got_count = _randint(g, 0, 4, F)  # (zeros: no draws)
            total = int(got_count.sum())
            got = _randint(g, 0, 99, 2 * total).view(total, 2)
            begin = int(_randint(g, 0, 10, 1))
            args = (got.to(device), got_count.to(device), perm.to(device),
                    begin, total)
            for a, b in zip(ops.dist_frontier_order(*args),
                            ref_frontier_order(*args)):
                assert torch.equal(a, b)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('timed', [False, True])
def test_requests_equal_the_reference(device, timed):
    g = torch.Generator().manual_seed(2)
    N, W = 50, 3
    owner_map = _randint(g, 0, W, N).to(device)
    # (above 4,096 frontier nodes the owners are sorted as uint8)
    for K in [0, 1, 10, 64, 9000]:
        S = 4
        # disjoint keys: seed index * N + node
        key = (_randint(g, 0, S, K) * N + _randint(g, 0, N, K)).to(device)
        seed_time = _randint(g, 0, 100, S).to(device) if timed else None
        for begin, end in [(0, K), (K // 3, K), (K // 2, K // 2)]:
            got = ops.dist_requests(key, begin, end, N, owner_map, W,
                                    seed_time)
            want = ref_requests(key, begin, end, N, owner_map, W, seed_time)
            for a, b in zip(got, want):
                assert torch.equal(a, b)
            assert got[0].shape == (end - begin, 3 if timed else 2)


@pytest.mark.parametrize('device', DEVICES)
def test_reply_sizes_equal_the_reference(device):
    g = torch.Generator().manual_seed(3)
    for W in [1, 2, 4]:
        asked_counts = _randint(g, 0, 6, W)
        draw_count = _randint(g, 0, 5, int(asked_counts.sum()))
        owner = torch.sort(_randint(g, 0, W, 11)).values
        got_count = _randint(g, 0, 5, 11)
        for foreign in (False, True):
            args = [t.to(device) for t in (asked_counts, draw_count, owner,
                                           got_count)]
            flag = torch.tensor(foreign, device=device)
            assert torch.equal(ops.dist_reply_sizes(*args, flag),
                               ref_reply_sizes(*args, flag))


@pytest.mark.parametrize('device', DEVICES)
def test_padded_replies_equal_plain_loops(device):
    # pad: the draws of each request in K slots, -1 after them; unpad of the
    # padded replies, received in any order (perm), gives the draws target
    # after target in frontier order, as dist_frontier_order does on the
    # same draws unpadded. Requests without draws, K = 0, no requests.
    g = torch.Generator().manual_seed(4)
    for R, K in [(0, 3), (1, 0), (5, 0), (1, 1), (7, 3), (40, 15),
                 (300, 25)]:
        for _ in range(3):
            count = _randint(g, 0, K + 1, R)
            D = int(count.sum())
            row, edge = _randint(g, 0, 10 ** 6, D), _randint(g, 0, 10 ** 9, D)
            args = [t.to(device) for t in (count, row, edge)]
            reply = ops.dist_pad_replies(*args, K)
            assert torch.equal(reply, ref_pad_replies(*args, K))
            perm = torch.randperm(R, generator=g).to(device)
            begin = int(_randint(g, 0, 50, 1))
            got = ops.dist_unpad_replies(reply, perm, begin, K, D)
            want = ref_unpad_replies(reply, perm, begin, K)
            for a, b in zip(got, want):
                assert torch.equal(a, b)
            unpadded = ops.dist_frontier_order(
                torch.stack([row, edge], 1).to(device), count.to(device),
                perm, begin, D)
            for a, b in zip(got, unpadded):
                assert torch.equal(a, b)


@pytest.mark.cuda
def test_cuda_padded_replies_equal_the_composite_at_scale():
    # (many blocks; the CPU composite as the reference)
    g = torch.Generator().manual_seed(5)
    for R, K in [(200000, 15), (35000, 30)]:
        count = _randint(g, 0, K + 1, R)
        D = int(count.sum())
        row, edge = _randint(g, 0, 10 ** 8, D), _randint(g, 0, 10 ** 9, D)
        want = ops.dist_pad_replies(count, row, edge, K)
        got = ops.dist_pad_replies(count.cuda(), row.cuda(), edge.cuda(), K)
        assert torch.equal(got.cpu(), want)
        perm = torch.randperm(R, generator=g)
        want = ops.dist_unpad_replies(want, perm, 7, K, D)
        got = ops.dist_unpad_replies(got, perm.cuda(), 7, K, D)
        for a, b in zip(got, want):
            assert torch.equal(a.cpu(), b)


@pytest.mark.parametrize('device', DEVICES)
def test_padded_replies_refuse_bad_arguments(device):
    long = dict(dtype=torch.long, device=device)
    one = torch.ones(2, **long)
    with pytest.raises(RuntimeError, match="dist_pad_replies: 'row' and "
                       "'edge' must hold one entry per draw"):
        ops.dist_pad_replies(one, torch.ones(2, **long),
                             torch.ones(3, **long), 1)
    with pytest.raises(RuntimeError, match="dist_pad_replies: 'K'"):
        ops.dist_pad_replies(one, one, one, -1)
    with pytest.raises(RuntimeError, match="dist_pad_replies: 'count' must "
                       "be"):
        ops.dist_pad_replies(one.int(), one, one, 1)
    got = torch.zeros(2, 3, **long)
    with pytest.raises(RuntimeError, match=r"dist_unpad_replies: 'got' must "
                       r"be \[F, 1 \+ 2K\]"):
        ops.dist_unpad_replies(got, torch.arange(2, device=device), 0, 2, 0)
    with pytest.raises(RuntimeError, match="dist_unpad_replies: 'perm' must "
                       "hold one entry per reply"):
        ops.dist_unpad_replies(got, torch.arange(3, device=device), 0, 1, 0)
    with pytest.raises(RuntimeError, match="dist_unpad_replies: 'total'"):
        ops.dist_unpad_replies(got, torch.arange(2, device=device), 0, 1, 3)


def test_bad_inputs_name_the_op_and_argument():
    key = torch.arange(5)
    with pytest.raises(RuntimeError, match="dist_relabel: 'src' must be"):
        ops.dist_relabel(key, torch.zeros(3, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="dist_requests: the frontier"):
        ops.dist_requests(key, 3, 9, 5, torch.zeros(5, dtype=torch.long), 2,
                          None)
    with pytest.raises(RuntimeError, match="dist_frontier_order: 'got'"):
        ops.dist_frontier_order(torch.zeros(4, 3, dtype=torch.long),
                                torch.ones(4, dtype=torch.long),
                                torch.arange(4), 0, 4)
    with pytest.raises(RuntimeError, match="dist_reply_sizes: 'owner'"):
        ops.dist_reply_sizes(torch.ones(2, dtype=torch.long),
                             torch.ones(2, dtype=torch.long),
                             torch.ones(3, dtype=torch.long),
                             torch.ones(2, dtype=torch.long),
                             torch.tensor(False))
