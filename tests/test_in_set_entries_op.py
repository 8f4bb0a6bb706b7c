"""fusesample::in_set_entries against a Python loop over every scanned list:
sets of different sizes sharing nodes, skipped (hub) positions, isolated
nodes, parallel entries, a set whose members' lists miss it, int32 and int64
lists, empty inputs; CPU == CUDA; opcheck; bad inputs (CPU checks ids)."""
import pytest
import torch

from conftest import devices
from pyg_fusesample.ops import in_set_entries


def sets(seed=0, num_nodes=30, num_sets=12, dtype=torch.long):
    # A random multigraph's CSC (lists sorted, some parallel entries, a few
    # isolated nodes) and node sets of 0-12 members, laid out as
    # grouped_induced_edges gets them: keys group * N + node, sorted.
    g = torch.Generator().manual_seed(seed)
    E = 200
    dst = torch.randint(0, num_nodes - 3, (E, ), generator=g)  # 3 isolated
    src = torch.randint(0, num_nodes, (E, ), generator=g)
    order = (dst * num_nodes + src).argsort()
    dst, src = dst[order], src[order]
    ptr = torch.zeros(num_nodes + 1, dtype=torch.long)
    ptr[1:] = torch.bincount(dst, minlength=num_nodes).cumsum(0)
    members = [torch.randperm(num_nodes, generator=g)[:int(k)].sort().values
               for k in torch.randint(0, 13, (num_sets, ), generator=g)]
    node = torch.cat(members)
    group = torch.cat([torch.full((m.numel(), ), i) for i, m in enumerate(members)])
    key = group * num_nodes + node
    set_ptr = torch.searchsorted(key, torch.arange(num_sets + 1) * num_nodes)
    skip = torch.rand(node.numel(), generator=g) < 0.2
    return ptr, src.to(dtype), node, group, key, set_ptr, skip, num_nodes


def reference(ptr, nbr, node, group, key, set_ptr, skip, num_nodes):
    out = []
    where = {k: i for i, k in enumerate(key.tolist())}
    for i, (v, g) in enumerate(zip(node.tolist(), group.tolist())):
        if skip[i]:
            continue
        for s in range(int(ptr[v]), int(ptr[v + 1])):
            f = where.get(g * num_nodes + int(nbr[s]))
            if f is not None:
                out.append((f, i, s))
    return torch.tensor(out, dtype=torch.long).view(-1, 3).t()


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype', [torch.long, torch.int])
@pytest.mark.parametrize('seed', [0, 1, 2])
def test_matches_the_loop(device, dtype, seed):
    args = sets(seed=seed, dtype=dtype)
    want = reference(*args)
    assert want.size(1) > 20  # the sets share edges
    got = in_set_entries(*[a.to(device) if torch.is_tensor(a) else a
                           for a in args])
    for a, b in zip(got, want):
        assert a.dtype == torch.long and torch.equal(a.cpu(), b)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('seed', [0, 1])
def test_keys_other_than_the_positions(device, seed):
    # The hetero induced subgraph's use: lists scanned at some positions,
    # looked up in a key set of another size (here 2 sets of members).
    ptr, nbr, node, group, _, _, skip, N = sets(seed=seed)
    g = torch.Generator().manual_seed(seed)
    members = [torch.randperm(N, generator=g)[:k].sort().values
               for k in (17, 5)]
    key = torch.cat([m + i * N for i, m in enumerate(members)])
    set_ptr = torch.tensor([0, 17, 22])
    group = group % 2
    args = (ptr, nbr, node, group, key, set_ptr, skip, N)
    want = reference(*args)
    assert want.size(1) > 10 and key.numel() != node.numel()
    got = in_set_entries(*[a.to(device) if torch.is_tensor(a) else a
                           for a in args])
    for a, b in zip(got, want):
        assert torch.equal(a.cpu(), b)


@pytest.mark.parametrize('device', devices())
def test_long_lists_and_one_member_sets(device):
    # A hub list longer than a warp's 32 entries, read in several rounds, in
    # a set of one (every entry misses) and of everything (every one hits).
    N = 70
    src = torch.arange(N).repeat(2).sort().values  # node 0's list: 140 entries
    ptr = torch.tensor([0] + [src.numel()] * N)
    node = torch.cat([torch.tensor([0]), torch.arange(N)])
    group = torch.cat([torch.tensor([0]), torch.ones(N, dtype=torch.long)])
    key = group * N + node
    set_ptr = torch.tensor([0, 1, N + 1])
    skip = torch.zeros(N + 1, dtype=torch.bool)
    found, pos, slot = in_set_entries(ptr.to(device), src.to(device),
                                      node.to(device), group.to(device),
                                      key.to(device), set_ptr.to(device),
                                      skip.to(device), N)
    # set 0 ({0}): 0's two entries of 0 hit; set 1 (all): 140 hits
    assert pos.tolist() == [0, 0] + [1] * 140
    assert slot.tolist() == [0, 1] + list(range(140))
    assert found.tolist() == [0, 0] + (src + 1).tolist()


@pytest.mark.parametrize('device', devices())
def test_empty(device):
    ptr, nbr, node, group, key, set_ptr, skip, N = sets()
    none = node[:0]
    out = in_set_entries(ptr.to(device), nbr.to(device), none.to(device),
                         none.to(device), none.to(device),
                         torch.zeros(1, dtype=torch.long, device=device),
                         skip[:0].to(device), N)
    assert all(t.numel() == 0 and t.dtype == torch.long for t in out)
    everything = torch.ones_like(skip)
    out = in_set_entries(*[a.to(device) for a in (ptr, nbr, node, group, key,
                                                  set_ptr, everything)], N)
    assert all(t.numel() == 0 for t in out)


def test_opcheck():
    torch.library.opcheck(torch.ops.fusesample.in_set_entries.default, sets())


def test_bad_inputs():
    ptr, nbr, node, group, key, set_ptr, skip, N = sets()
    with pytest.raises(RuntimeError, match="'skip' must be Bool"):
        in_set_entries(ptr, nbr, node, group, key, set_ptr, skip.long(), N)
    with pytest.raises(RuntimeError, match="one entry per position"):
        in_set_entries(ptr, nbr, node, group[:-1], key, set_ptr, skip, N)
    with pytest.raises(RuntimeError, match="'nbr' must be int64 or int32"):
        in_set_entries(ptr, nbr.float(), node, group, key, set_ptr, skip, N)
    with pytest.raises(RuntimeError, match="outside"):
        in_set_entries(ptr, nbr, node + N, group, key, set_ptr, skip, N)
    with pytest.raises(RuntimeError, match="'set_ptr' must rise"):
        in_set_entries(ptr, nbr, node, group, key, set_ptr.flip(0), skip, N)
