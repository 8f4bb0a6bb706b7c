"""Issue 43, "No input corrupts memory": malformed inputs to every public
entry point (``pyg_fusesample.ops``, the raw ``torch.ops.fusesample`` ops,
the loaders, samplers and layers, ``FusedSparseAdam``) end in a Python
exception whose message names the argument -- never a crash, a hang or a
silent wrong answer.

Every case runs in a child process (``bad_inputs_child.py``, many cases per
process): a case that kills its process (a signal, heap corruption, a lost
CUDA context) fails that case by name, and the rest run in a new process.
CPU always; the same table on CUDA (marked ``cuda``). A ``hypothesis``
generator adds ids, pointers and shapes around the boundaries.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bad_inputs_runner import run_cases
from conftest import devices

ERRORS = ('ValueError', 'RuntimeError', 'TypeError', 'IndexError')

# name -> (code run in the child's namespace, substring(s) of the message:
# the argument's name, what CUDA must do). The namespace
# (bad_inputs_child.namespace) holds a 6-node graph (ei, its CSC
# colptr/row, its CSR rowptr/col), x, the helper t(values, dtype) and
# malformed pointer arrays (ptr_desc, ptr_last_big, ptr_last_small,
# ptr_first_neg, ptr_huge).
#
# On CUDA a raw op reads a graph's values on the host once per graph (one
# sync the first time a graph is seen: kernels/common/value_checks.h), so a
# malformed graph raises there too. Bad seeds of sample_aggregate / sage_tree
# are reported through the error word instead (no sync per call: see the
# CUDA-only cases): those must only end without a crash ('no_crash'); all
# others must raise on both devices ('raise').
CASES = {}


def case(name, code, names, cuda='raise'):
    assert name not in CASES, name
    assert cuda in ('raise', 'no_crash', 'skip')
    CASES[name] = (textwrap.dedent(code), names, cuda)


# --- the reproduction --------------------------------------------
case('FusedNode2Vec/ids_above_num_nodes', '''
    ei50 = torch.randint(0, 50, (2, 200), device=dev)
    m = pfs.FusedNode2Vec(ei50, embedding_dim=8, walk_length=5,
                          context_size=3, num_nodes=20)
    m.pos_sample(torch.arange(10))''', "'edge_index'")
case('FusedNode2Vec/negative_ids', '''
    pfs.FusedNode2Vec(t([[0, -1], [1, 2]]), 8, 3, 2, num_nodes=N)''',
     "'edge_index'")
case('FusedNode2Vec/float_edge_index', '''
    pfs.FusedNode2Vec(ei.float(), 8, 3, 2, num_nodes=N)''', "'edge_index'")
case('FusedNode2Vec/1d_edge_index', '''
    pfs.FusedNode2Vec(ei[0], 8, 3, 2, num_nodes=N)''', "'edge_index'")
case('FusedNode2Vec/negative_num_nodes', '''
    pfs.FusedNode2Vec(ei[:, :0], 8, 3, 2, num_nodes=-3)''', "'num_nodes'")
case('FusedNode2Vec/pos_sample_out_of_range', '''
    pfs.FusedNode2Vec(ei, 8, 3, 2, num_nodes=N).pos_sample(t([0, N]))''',
     "'start'")

# --- raw ops on a CSC / CSR: bad pointers, ids, seeds ---------------------
# (op, template: {P} pointer array, {I} index array, {S} seeds; the
# argument names its messages use)
GRAPH_OPS = {
    'neighbor_sample': ("ops.neighbor_sample({P}, {I}, None, {S}, [2, 2])",
                        'colptr', 'row', 'seed'),
    'neighbor_sample_all': (
        "ops.neighbor_sample({P}, {I}, None, {S}, [-1, -1], disjoint=True)",
        'colptr', 'row', 'seed'),
    'neighbor_sample_async': (
        "pfs.ops.neighbor_sample_async({P}, {I}, None, {S}, [2, 2]).wait()",
        'colptr', 'row', 'seed'),
    'induced_subgraph': ("ops.induced_subgraph({P}, {I}, None, {S})",
                         'colptr', 'row', 'node'),
    'layer_sample': (
        "ops.layer_sample({P}, {I}, None, None, None, {S}, [2, -1], 0)",
        'colptr', 'row', 'seed'),
    'layer_batch': (
        "ops.layer_batch({P}, {I}, None, None, None, {S}, [2, 2], 0, E, "
        "True, torch.float32, [])", 'colptr', 'row', 'seed'),
    'sample_aggregate': ("ops.sample_aggregate({P}, {I}, x, {S}, 2)",
                         'colptr', 'row', 'target'),
    'sample_aggregate_all': ("ops.sample_aggregate({P}, {I}, x, {S}, -1)",
                             'colptr', 'row', 'target'),
    'sage_tree': (
        "pfs.ops.sage_tree(x, {P}, {I}, {S}, [torch.randn(3, 4, device=dev),"
        " torch.randn(3, 4, device=dev), torch.randn(3, device=dev)], [2], "
        "torch.float32, replay=False)", 'colptr', 'row', 'seeds'),
    'shadow_subgraph': (
        "ops.shadow_subgraph({P}, {I}, None, {S}, 2, 2, False, 0, False, "
        "True, 64, 4, 1 << 22, [], [], [])", 'colptr', 'row', 'seed'),
    'random_walk': (
        "ops.random_walk({P}, {I}, None, None, {S}, 3, 1.0, 1.0, 0.0, 0, "
        "False)", 'rowptr', 'col', 'start'),
    'random_walk_node2vec': (
        "ops.random_walk({P}, {I}, None, None, {S}, 3, 2.0, 0.5, 0.0, 0, "
        "False)", 'rowptr', 'col', 'start'),
    'spmm': ("ops.spmm({P}, {I}, None, x)", 'rowptr', 'col', None),
    'spmm_hub': ("ops.spmm({P}, {I}, None, x, 'sum', 'hub', 1)",
                 'rowptr', 'col', None),
    'sddmm': ("ops.sddmm({P}, {I}, x, x)", 'rowptr', 'col', None),
}
POINTERS = {  # malformed pointer arrays of the 6-node graph (N + 1 entries)
    'not_monotone': 'ptr_desc', 'last_above_nnz': 'ptr_last_big',
    'last_below_nnz': 'ptr_last_small', 'first_negative': 'ptr_first_neg',
    'last_huge': 'ptr_huge', 'int32': 'colptr.int()',
    'float': 'colptr.float()', '2d': 'colptr.view(1, -1)', 'empty': 't([])',
}
INDICES = {  # malformed index arrays (E entries unless said)
    'id_equal_N': 't([1, 2, 3, 4, 5, 0, N])',
    'id_negative': 't([1, 2, 3, 4, 5, 0, -1])',
    'id_2_pow_40': 't([1, 2, 3, 4, 5, 0, 2**40])',
    'int32_id_equal_N': 't([1, 2, 3, 4, 5, 0, N], torch.int32)',
    'float': 'row.float()', 'too_short': 'row[:3]',
}
SEEDS = {
    'equal_N': 't([0, N])', 'negative': 't([-2, 0])',
    'huge': 't([2**40])', 'int32': 't([0, 1], torch.int32)',
    'float': 't([0., 1.], torch.float)', '2d': 't([[0, 1]])',
}
# Ops whose CUDA path meets a bad seed without a host sync: sample_aggregate
# and sage_tree report it through the error word, random_walk gives the
# walk a row of -1 (its documented CUDA contract); the CPU raises.
FLAGGED = ('sample_aggregate', 'sample_aggregate_all', 'sage_tree',
           'random_walk', 'random_walk_node2vec')
for op, (tpl, ptr_name, idx_name, seed_name) in GRAPH_OPS.items():
    for what, ptr in POINTERS.items():
        case(f'{op}/{ptr_name}_{what}', tpl.format(P=ptr, I='row', S='t([0, 1])'),
             f"'{ptr_name}")
    for what, idx in INDICES.items():
        case(f'{op}/{idx_name}_{what}',
             tpl.format(P='colptr', I=idx, S='t([0, 1])'),
             (f"'{idx_name}'", f"'{ptr_name}[-1]'", f"'{ptr_name}'"))
    if seed_name is None:
        continue
    for what, seed in SEEDS.items():
        if what == '2d' and op.startswith('random_walk'):
            continue  # a 2-D start is a multi-root walk
        case(f'{op}/{seed_name}_{what}',
             tpl.format(P='colptr', I='row', S=seed), f"'{seed_name}'",
             'no_crash' if op in FLAGGED and what in (
                 'equal_N', 'negative', 'huge') else 'raise')

# csr_softmax takes pointers over edge values.
for op, tpl in (('csr_softmax', 'ops.csr_softmax({P}, v)'),
                ('csr_softmax_backward',
                 'ops.csr_softmax_backward({P}, v, v)')):
    for what, ptr in POINTERS.items():
        case(f'{op}/rowptr_{what}',
             'v = torch.ones(E, device=dev)\n' + tpl.format(P=ptr), "'rowptr")
    case(f'{op}/value_too_short',
         'v = torch.ones(3, device=dev)\n' + tpl.format(P='colptr'),
         "'rowptr[-1]'")

# --- ops.* wrappers and other raw ops --------------------------------------
# (csc_from_coo has a CPU kernel only: the cases that reach the op are
# CPU cases; on CUDA the dispatcher says the op has no CUDA kernel)
case('csc_from_coo/id_equal_num_nodes', 'pfs.ops.csc_from_coo(ei, N - 1)',
     "'row'", cuda='skip')
case('csc_from_coo/negative_id', 'pfs.ops.csc_from_coo(t([[0, -1], [1, 2]]), N)',
     "'row'", cuda='skip')
case('csc_from_coo/1d', 'pfs.ops.csc_from_coo(ei[0], N)', "'edge_index'")
case('csc_from_coo/3xE', 'pfs.ops.csc_from_coo(torch.cat([ei, ei[:1]]), N)',
     "'edge_index'")
case('csc_from_coo/float', 'pfs.ops.csc_from_coo(ei.float(), N)', "'row'",
     cuda='skip')
case('csc_from_coo/negative_num_nodes', 'pfs.ops.csc_from_coo(ei[:, :0], -1)',
     "'num_nodes'", cuda='skip')
case('csc_from_coo/lengths_differ', 'ops.csc_from_coo(ei[0], ei[1, :3], N)',
     "'row'", cuda='skip')
case('gather_rows/index_equal_N', 'pfs.ops.gather_rows(x, t([0, N]))', "'index'")
case('gather_rows/index_negative', 'pfs.ops.gather_rows(x, t([-1]))', "'index'")
case('gather_rows/int32_index', 'pfs.ops.gather_rows(x, t([0], torch.int32))',
     "'index'")
case('gather_rows/2d_index', 'pfs.ops.gather_rows(x, t([[0]]))', "'index'")
case('gather_rows/0d_src', 'pfs.ops.gather_rows(x[0, 0], t([0]))', "'src'")
case('gather_rows_list/index_equal_N',
     'pfs.ops.gather_rows_list([x, x], t([N]))', "'index'")
case('gather_rows_cached/index_equal_N', '''
    pfs.ops.gather_rows_cached(x, x[:2].clone(),
                               t([0, 1, -1, -1, -1, -1], torch.int32),
                               t([N]), t([0]))''', "'index'", cuda='no_crash')
case('gather_rows_cached/slot_out_of_cache', '''
    pfs.ops.gather_rows_cached(x, x[:2].clone(),
                               t([0, 5, -1, -1, -1, -1], torch.int32),
                               t([1]), t([0]))''', "'cache_slot'", cuda='no_crash')
case('gather_rows_cached/slot_length', '''
    pfs.ops.gather_rows_cached(x, x[:2].clone(), t([0, 1], torch.int32),
                               t([1]), t([0]))''', "'cache_slot'")
case('skipgram_loss/pos_id_out_of_range', '''
    pfs.ops.skipgram_loss(torch.randn(4, 3, device=dev), t([[0, 4]]),
                          t([[0, 1]]))''', "'pos'")
case('skipgram_loss/neg_id_negative', '''
    pfs.ops.skipgram_loss(torch.randn(4, 3, device=dev), t([[0, 1]]),
                          t([[0, -1]]))''', "'neg'")
case('skipgram_loss/pos_1d', '''
    pfs.ops.skipgram_loss(torch.randn(4, 3, device=dev), t([0, 1]),
                          t([[0, 1]]))''', "'pos'")
case('sparse_adam_/row_equal_R', '''
    p = torch.zeros(4, 2, device=dev)
    pfs.ops.sparse_adam_(p, torch.zeros_like(p), torch.zeros_like(p), t([4]),
                         torch.ones(1, 2, device=dev), 0.1, 0.9, 0.999, 1e-8)
     ''', "'rows'", cuda='skip')
case('sparse_adam_/values_length', '''
    p = torch.zeros(4, 2, device=dev)
    pfs.ops.sparse_adam_(p, torch.zeros_like(p), torch.zeros_like(p),
                         t([0, 1]), torch.ones(1, 2, device=dev), 0.1, 0.9,
                         0.999, 1e-8)''',
     "'values'")
case('sparse_adam_/state_shape', '''
    p = torch.zeros(4, 2, device=dev)
    pfs.ops.sparse_adam_(p, torch.zeros(3, 2, device=dev), torch.zeros_like(p),
                         t([0]), torch.ones(1, 2, device=dev), 0.1, 0.9,
                         0.999, 1e-8)''',
     "'exp_avg'")
case('segment_search/run_past_end', '''
    pfs.ops.segment_search(t([1, 2, 3]), t([2]), t([5]), t([2]))''',
     "'sorted'", cuda='no_crash')
case('segment_search/negative_first', '''
    pfs.ops.segment_search(t([1, 2, 3]), t([-1]), t([2]), t([2]))''',
     "'sorted'", cuda='no_crash')
case('segment_search/value_dtype', '''
    pfs.ops.segment_search(t([1, 2, 3]), t([0]), t([2]), t([2], torch.int32))''',
     "'value'")
case('split_by_type/node_out_of_offsets', '''
    pfs.ops.split_by_type(t([0, 9]), t([0, 2, 4]), t([0]), t([1]), t([0]),
                          t([0, 1]))''', ("'node'", "'node_type'"), cuda='no_crash')
case('split_by_type/row_out_of_sample', '''
    pfs.ops.split_by_type(t([0, 1]), t([0, 2, 4]), t([5]), t([0]), t([0]),
                          t([0, 1]))''', "'row'", cuda='no_crash')
case('split_by_type/col_out_of_sample', '''
    pfs.ops.split_by_type(t([0, 1]), t([0, 2, 4]), t([0]), t([5]), t([0]),
                          t([0, 1]))''', "'col'", cuda='no_crash')
case('in_set_entries/ptr_not_monotone', '''
    pfs.ops.in_set_entries(ptr_desc, row, t([0]), t([0]), t([0]), t([0, 1]),
                           t([False], torch.bool), N)''', "'ptr", cuda='no_crash')
case('in_set_entries/node_out_of_range', '''
    pfs.ops.in_set_entries(colptr, row, t([N]), t([0]), t([N]), t([0, 1]),
                           t([False], torch.bool), N)''', "holds node",
     cuda='no_crash')
case('in_set_entries/nbr_out_of_range', '''
    pfs.ops.in_set_entries(colptr, t([1, 2, 3, 4, 5, 0, 9]), t([0]), t([0]),
                           t([0]), t([0, 1]), t([False], torch.bool), N)''',
     "'nbr'", cuda='no_crash')
case('in_set_entries/set_ptr_past_keys', '''
    pfs.ops.in_set_entries(colptr, row, t([0]), t([0]), t([0]), t([0, 4]),
                           t([False], torch.bool), N)''', "'set_ptr", cuda='no_crash')
case('random_walk/edge_index_out_of_range',
     'pfs.ops.random_walk(t([[0, 1], [1, N]]), t([0]), 3, num_nodes=N)',
     "'edge_index'")
case('random_walk/csr_not_monotone',
     'pfs.ops.random_walk((ptr_desc, row), t([0]), 3)', "'rowptr'")
case('random_walk/csr_first_negative',
     'pfs.ops.random_walk((ptr_first_neg, row), t([0]), 3)', "'rowptr'")
case('random_walk/csr_col_out_of_range',
     'pfs.ops.random_walk((colptr, t([1, 2, 3, 4, 5, 0, N])), t([0]), 3)',
     "'col'")
case('random_walk/weight_length',
     'pfs.ops.random_walk(ei, t([0]), 3, edge_weight=torch.ones(3))',
     "'edge_weight'")
case('random_walk/weight_nan', '''
    w = torch.ones(E); w[0] = float('nan')
    pfs.ops.random_walk(ei, t([0]), 3, edge_weight=w)''', "'edge_weight'")
case('layer_sample/edge_value_length', '''
    pfs.ops.layer_sample(colptr, row, None, t([0]), [2], 0,
                         edge_value=torch.ones(3, dtype=torch.double,
                                               device=dev))''', "'edge_value'")
case('layer_sample/node_cumsum_length', '''
    pfs.ops.layer_sample(colptr, row, None, t([0]), [2], 0,
                         node_cumsum=torch.ones(2, dtype=torch.double,
                                                device=dev))''', "'node_cumsum'")
case('neighbor_sample/edge_id_length',
     'ops.neighbor_sample(colptr, row, t([0]), t([0]), [2])', "'edge_id'")
case('neighbor_sample/fanout_below_minus_1',
     'ops.neighbor_sample(colptr, row, None, t([0]), [-2])',
     "'num_neighbors[0]'")
case('neighbor_sample/edge_time_length', '''
    ops.neighbor_sample(colptr, row, None, t([0]), [2], disjoint=True,
                        edge_time=t([0]), seed_time=t([0]))''', "'edge_time'")
case('neighbor_sample/typed_offsets_not_ascending', '''
    ops.neighbor_sample(colptr, row, None, t([0]), [2],
                        node_type_offsets=[0, 4, 2, N],
                        edge_type_offsets=[0, E], edge_type_nodes=[0, 0])''',
     "'node_type_offsets'")

# --- loaders and samplers ----------------------------------------------------
for cls, call in (
        ('FusedNeighborLoader',
         'first(pfs.FusedNeighborLoader({D}, [2, 2], batch_size=2))'),
        ('FusedNeighborSampler',
         'pfs.FusedNeighborSampler({D}, [2, 2])'),
        ('FusedLinkNeighborLoader',
         'first(pfs.FusedLinkNeighborLoader({D}, [2], batch_size=2, '
         'edge_label_index=ei))'),
        ('FusedGraphSAINTRandomWalkSampler',
         'first(pfs.FusedGraphSAINTRandomWalkSampler({D}, 2, 2, log=False))'),
        ('FusedShaDowKHopSampler',
         'first(pfs.FusedShaDowKHopSampler({D}, 2, 2, batch_size=2))'),
        ('LayerWiseLoader',
         'first(pfs.LayerWiseLoader({D}, [2, 2], batch_size=2))')):
    case(f'{cls}/edge_index_id_equal_N',
         call.format(D='data(t([[0, 1], [1, N]]))'), "'edge_index'")
    case(f'{cls}/edge_index_negative',
         call.format(D='data(t([[0, -1], [1, 2]]))'), "'edge_index'")
    case(f'{cls}/edge_index_3xE',
         call.format(D='data(torch.cat([ei, ei[:1]]))'), "'edge_index'")
    case(f'{cls}/edge_index_float',
         call.format(D='data(ei.float())'), "'edge_index'")
case('FusedNeighborLoader/input_nodes_equal_N',
     'first(pfs.FusedNeighborLoader(data(), [2], input_nodes=t([0, N])))',
     "'input_nodes'")
case('FusedNeighborLoader/input_nodes_negative',
     'first(pfs.FusedNeighborLoader(data(), [2], input_nodes=t([-1])))',
     "'input_nodes'")
case('FusedNeighborLoader/input_nodes_mask_length', '''
    first(pfs.FusedNeighborLoader(data(), [2],
                                  input_nodes=torch.ones(3, dtype=torch.bool)))''',
     "'input_nodes'")
case('FusedNeighborLoader/bad_fanout',
     'pfs.FusedNeighborLoader(data(), [-3])', "num_neighbors")
case('FusedNeighborLoader/weight_length', '''
    first(pfs.FusedNeighborLoader(data(w=torch.ones(3)), [2],
                                  weight_attr='w'))''', "'w'")
case('FusedNeighborLoader/negative_weight', '''
    first(pfs.FusedNeighborLoader(data(w=-torch.ones(E)), [2],
                                  weight_attr='w'))''', "'w'")
case('FusedNeighborLoader/time_length', '''
    first(pfs.FusedNeighborLoader(data(time=t([0, 1])), [2], time_attr='time',
                                  input_time=t([5] * N)))''', "time")
case('FusedLinkNeighborLoader/edge_label_index_equal_N', '''
    first(pfs.FusedLinkNeighborLoader(data(), [2], batch_size=2,
                                      edge_label_index=t([[0], [N]])))''',
     "'edge_label_index'")
case('FusedShaDowKHopSampler/node_idx_equal_N',
     'first(pfs.FusedShaDowKHopSampler(data(), 2, 2, node_idx=t([N])))',
     "'node_idx'")
case('LayerWiseLoader/input_nodes_equal_N',
     'first(pfs.LayerWiseLoader(data(), [2], input_nodes=t([N])))',
     "'input_nodes'")

# --- layers and the optimizer ---------------------------------------------------
case('FusedSAGEConv/edge_index_id_equal_N', '''
    pfs.FusedSAGEConv(4, 3, num_neighbors=2)(x, t([[0, N], [1, 2]]))''',
     "'edge_index'")
case('FusedSAGEConv/target_equal_N', '''
    pfs.FusedSAGEConv(4, 3, num_neighbors=2)(x, ei, t([N]))''', "'target'",
     cuda='no_crash')
case('FusedSAGEConv/sparse_csr_not_monotone', '''
    adj = torch.sparse_csr_tensor(ptr_desc.cpu(), row.cpu(), torch.ones(E),
                                  (N, N)).to(dev)
    pfs.FusedSAGEConv(4, 3, num_neighbors=2)(x, adj)''', "'crow_indices'")
case('FusedSAGEConv/sparse_csr_col_out_of_range', '''
    adj = torch.sparse_csr_tensor(colptr.cpu(), t([1, 2, 3, 4, 5, 0, 9]).cpu(),
                                  torch.ones(E), (N, N)).to(dev)
    pfs.FusedSAGEConv(4, 3, num_neighbors=2)(x, adj)''', "'col_indices'")
case('FusedGraphSAGE/seeds_equal_N_cpu_or_eval', '''
    m = pfs.FusedGraphSAGE(4, 8, 3, 2, [2, 2]).to(dev)
    if dev != 'cpu':
        m.eval()
    m(x, ei, t([0, N]))''', "'seed_nodes'")
case('FusedGraphSAGE/seeds_negative', '''
    m = pfs.FusedGraphSAGE(4, 8, 3, 2, [2, 2]).to(dev)
    if dev != 'cpu':
        m.eval()
    m(x, ei, t([-1]))''', "'seed_nodes'")
case('FusedGraphSAGE/edge_index_id_equal_N', '''
    pfs.FusedGraphSAGE(4, 8, 3, 2, [2, 2]).to(dev)(x, t([[0, N], [1, 2]]))''',
     "'edge_index'")
case('FusedGraphSAGE/seeds_float', '''
    pfs.FusedGraphSAGE(4, 8, 3, 2, [2, 2]).to(dev)(x, ei, t([0.], torch.float))''',
     "'seed_nodes'")
case('AutoSpMMConv/edge_index_id_equal_N', '''
    pfs.AutoSpMMConv(4, 3).to(dev)(x, t([[0, N], [1, 2]]))''', "'edge_index'")
case('AutoSpMMConv/edge_index_negative', '''
    pfs.AutoSpMMConv(4, 3).to(dev)(x, t([[0, -1], [1, 2]]))''', "'edge_index'")
case('AutoSpMMConv/edge_index_id_equal_N_mean', '''
    pfs.AutoSpMMConv(4, 3, aggr='mean').to(dev)(x, t([[0, N], [1, 2]]))''',
     "'edge_index'")
case('AutoSpMMConv/edge_weight_length', '''
    pfs.AutoSpMMConv(4, 3).to(dev)(x, ei, torch.ones(3, device=dev))''',
     "'edge_weight'")
case('AutoSpMMConv/sparse_csr_not_monotone', '''
    adj = torch.sparse_csr_tensor(ptr_desc.cpu(), row.cpu(), torch.ones(E),
                                  (N, N)).to(dev)
    pfs.AutoSpMMConv(4, 3).to(dev)(x, adj)''', "'crow_indices'")
case('FusedSparseAdam/not_sparse_grad', '''
    p = torch.nn.Parameter(torch.zeros(4, 2, device=dev))
    p.grad = torch.ones(4, 2, device=dev)
    pfs.optim.FusedSparseAdam([p]).step()''', "dense gradients")

# --- CUDA: ids the kernels report without a sync (run on the CPU too) ------
# The CPU raises at the first call; CUDA computes the bad call (no assert,
# the context survives) and raises at a later call once the error word's
# asynchronous copy has arrived.
case('FusedGraphSAGE/train_seeds_reported_later', '''
    ops.sample_aggregate_error(x).zero_()  # (earlier cases' reports)
    m = pfs.FusedGraphSAGE(4, 8, 3, 2, [2, 2]).to(dev)
    m(x, ei, t([0, N])).sum().backward()  # CPU: raises here
    torch.cuda.synchronize()
    m(x, ei, t([0, 1]))                   # CUDA: raises here
    ''', "'seed_nodes'")
case('FusedGraphSAGE/train_seeds_reported_after_replay', '''
    ops.sample_aggregate_error(x).zero_()
    m = pfs.FusedGraphSAGE(4, 8, 3, 2, [2, 2]).to(dev)
    for seeds in (t([0, 1]), t([2, 3]), t([4, 5]), t([1, 2 * N])):
        m(x, ei, seeds).sum().backward()  # (replayed from the third call)
        if dev == 'cuda' and int(seeds[-1]) < N:  # no report yet
            assert int(ops.sample_aggregate_error(x)[0]) == 0
    if dev == 'cuda':
        torch.cuda.synchronize()
    m(x, ei, t([0, 1]))''', "'seed_nodes'")
case('FusedGraphSAGE/train_seeds_python_step', '''
    ops.sample_aggregate_error(x).zero_()
    m = pfs.FusedGraphSAGE(4, 8, 3, 2, [2, 2], act='tanh').to(dev)
    m(x, ei, t([-5, 0])).sum().backward()
    if dev == 'cuda':
        torch.cuda.synchronize()
    m(x, ei, t([0, 1]))''', "'seed_nodes'")
case('FusedSAGEConv/target_reported_later', '''
    ops.sample_aggregate_error(x).zero_()
    conv = pfs.FusedSAGEConv(4, 3, num_neighbors=2).to(dev)
    conv(x, ei, t([0, N + 3]))
    if dev == 'cuda':
        torch.cuda.synchronize()
    conv(x, ei, t([0, 1]))''', "'target'")
case('sample_aggregate/error_word', '''
    ops.sample_aggregate_error(x).zero_()
    out = ops.sample_aggregate(colptr, row, x, t([0, N, 1]), 2)
    torch.cuda.synchronize()
    word = ops.sample_aggregate_error(x)
    kind, bad = word.tolist()
    word.zero_()
    if (kind, bad) == (1, N) and bool((out[0][1] == 0).all()):
        raise RuntimeError("'target' reported in the error word")''',
     "'target'")


def _check(results, names, device='cpu'):
    failures = []
    for name in names:
        r = results.get(name)
        code, expected, on_cuda = CASES[name]
        expected = (expected,) if isinstance(expected, str) else expected
        lenient = device == 'cuda' and on_cuda == 'no_crash'
        if r is None:
            failures.append(f'{name}: no result')
        elif 'crash' in r:
            failures.append(f"{name}: the process died ({r['crash']}): "
                            f"{r['stderr'][-800:]}")
        elif r['ok'] and lenient:
            continue
        elif r['ok']:
            failures.append(f'{name}: no exception')
        elif not set(r['mro']) & set(ERRORS) or \
                (not any(e in r['msg'] for e in expected) and not lenient):
            failures.append(f"{name}: {r['type']}: {r['msg'][:300]!r} does "
                            f"not name {expected}")
    assert not failures, '\n'.join(failures)


@pytest.mark.parametrize('device', devices())
def test_bad_inputs_table(device):
    # (on CUDA: sparse_adam_'s rows out of range still trip a device assert)
    names = [n for n, (_, _, on_cuda) in CASES.items()
             if device == 'cpu' or on_cuda != 'skip']
    results = run_cases([(n, CASES[n][0]) for n in names], device,
                        timeout=300)
    _check(results, names, device)


# --- property-based: ids, pointers and shapes around the boundaries --------

HYPOTHESIS_CHILD = r'''
import json, sys
import torch
import pyg_fusesample  # noqa: F401
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

ops = torch.ops.fusesample
dev = sys.argv[1]
N_MAX = 5
edge = [-1, 0, 1, 2, 3, 4, 5, 6, 2**31 - 1, 2**31]  # around 0, N-1, N, 2^31
ERRORS = (ValueError, RuntimeError, TypeError, IndexError)


@st.composite
def graphs(draw):
    n = draw(st.integers(0, N_MAX))
    e = draw(st.integers(0, 6))
    ids = st.one_of(st.integers(0, max(n - 1, 0)), st.sampled_from(edge))
    idx = draw(st.lists(ids, min_size=e, max_size=e))
    # pointers: a valid one, then maybe broken (order, length, last entry)
    cuts = sorted(draw(st.lists(st.integers(0, e), min_size=max(n - 1, 0),
                                max_size=max(n - 1, 0))))
    ptr = [0] + cuts + [e] if n > 0 else [0]
    how = draw(st.sampled_from(['ok', 'swap', 'short', 'last', 'first']))
    if how == 'swap' and len(ptr) > 2:
        ptr[1], ptr[-2] = ptr[-2], ptr[1]
    elif how == 'short':
        ptr = ptr[:-1] or [0]
    elif how == 'last':
        ptr[-1] = draw(st.sampled_from(edge))
    elif how == 'first':
        ptr[0] = draw(st.sampled_from(edge))
    seeds = draw(st.lists(ids, min_size=0, max_size=3))
    return ptr, idx, seeds


def run(op, ptr, idx, seeds, valid):
    P = torch.tensor(ptr, dtype=torch.long, device=dev)
    I = torch.tensor(idx, dtype=torch.long, device=dev)
    S = torch.tensor(seeds, dtype=torch.long, device=dev)
    n = len(ptr) - 1
    x = torch.randn(n, 3, device=dev)
    calls = {
        'neighbor_sample': lambda: ops.neighbor_sample(P, I, None, S, [2, -1]),
        'induced_subgraph': lambda: ops.induced_subgraph(P, I, None, S.unique()),
        'sample_aggregate': lambda: ops.sample_aggregate(P, I, x, S, 2),
        'random_walk': lambda: ops.random_walk(P, I, None, None, S, 3, 2.0,
                                               0.5, 0.0, 0, False),
        'layer_sample': lambda: ops.layer_sample(P, I, None, None, None,
                                                 S.unique(), [2, -1], 0),
        'spmm': lambda: ops.spmm(P, I, None, x),
        'sddmm': lambda: ops.sddmm(P, I, x, x),
        'csr_softmax': lambda: ops.csr_softmax(P, torch.ones(len(idx), device=dev)),
        'csc_from_coo': lambda: ops.csc_from_coo(I, I.flip(0), max(n, 0)),
    }
    try:
        calls[op]()
        if dev == 'cuda':
            torch.cuda.synchronize()
    except ERRORS as e:
        if dev == 'cuda' and any(s in str(e) for s in (
                'device-side assert', 'illegal memory', 'launch failure')):
            raise AssertionError(f'the CUDA context was lost: {e}')
        return 'error'
    return 'ok'


def valid_graph(ptr, idx, seeds):
    n = len(ptr) - 1
    return (n >= 0 and ptr[0] == 0 and ptr[-1] == len(idx)
            and all(a <= b for a, b in zip(ptr, ptr[1:]))
            and all(0 <= i < n for i in idx))


@settings(max_examples=int(sys.argv[2]), derandomize=True, deadline=None,
          suppress_health_check=list(HealthCheck), database=None)
@given(graphs(), st.sampled_from(['neighbor_sample', 'induced_subgraph',
                                  'sample_aggregate', 'random_walk',
                                  'layer_sample', 'spmm', 'sddmm',
                                  'csr_softmax', 'csc_from_coo']))
def check(graph, op):
    ptr, idx, seeds = graph
    # On CUDA: well-formed graphs with seeds around the boundaries (the
    # table's CUDA cases cover malformed graphs, which the whole-graph ops
    # check there once per graph).
    assume(dev == 'cpu' or valid_graph(ptr, idx, seeds))
    print(json.dumps({'start': [op, ptr, idx, seeds]}), flush=True)
    outcome = run(op, ptr, idx, seeds, valid_graph(ptr, idx, seeds))
    # A malformed graph must raise (never a silent answer).
    if dev == 'cpu' and not valid_graph(ptr, idx, seeds) and \
            op not in ('csc_from_coo', 'csr_softmax'):
        assert outcome == 'error', (op, ptr, idx, seeds)


check()
print(json.dumps({'done': True}), flush=True)
'''


@pytest.mark.parametrize('device', devices())
def test_bad_inputs_hypothesis(device, tmp_path):
    pytest.importorskip('hypothesis')
    script = tmp_path / 'hypothesis_child.py'
    script.write_text(HYPOTHESIS_CHILD)
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, OMP_NUM_THREADS='1',
               PYTHONPATH=root + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run([sys.executable, str(script), device, '300'],
                          capture_output=True, text=True, env=env,
                          timeout=600, cwd=root)
    last = None
    for line in proc.stdout.splitlines():
        try:
            last = json.loads(line)
        except ValueError:
            pass
    assert proc.returncode == 0 and last == {'done': True}, (
        f'rc={proc.returncode}, last case {last}:\n{proc.stderr[-3000:]}')


def test_checked_graph_is_checked_again_after_an_in_place_edit():
    # The graph value checks run once per graph (kernels/common/value_checks.h):
    # a layout that passed is remembered by its storage, place and version
    # counter, so an in-place edit must bring the check back. In process:
    # every call here raises before a kernel reads the edited values.
    import torch
    import pyg_fusesample  # noqa: F401
    ops = torch.ops.fusesample
    colptr, row = torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 0])
    seed = torch.tensor([0])
    ops.neighbor_sample(colptr, row, None, seed, [1])
    ops.neighbor_sample(colptr, row, None, seed, [1])  # (remembered)
    row[1] = 3
    with pytest.raises(RuntimeError, match="'row' holds ids in"):
        ops.neighbor_sample(colptr, row, None, seed, [1])

    # The pointers alone (csr_softmax's rowptr over edge values) likewise.
    rowptr, value = torch.tensor([0, 2, 3]), torch.ones(3)
    ops.csr_softmax(rowptr, value)
    ops.csr_softmax(rowptr, value)
    rowptr[1] = 4
    with pytest.raises(RuntimeError, match="'rowptr' must be non-decreasing"):
        ops.csr_softmax(rowptr, value)
