"""Out-of-scope skips for PyG's vendored layer tests.

Every case of PyG's test_sage_conv.py, test_gcn_conv.py, test_gat_conv.py
and test_rgcn_conv.py runs against pyg_fusesample.nn's SAGEConv, GCNConv,
GATConv and RGCNConv (the one import swapped, see each file's header) except
those listed in OUT_OF_SCOPE below, which are skipped with the reason naming
what they test instead of our layer. A case that fails because our layer
differs from PyG's is not listed: it fails.

PyG's `if is_full_test():` blocks (torch.jit.script of the layer) run only
with FULL_TEST=1, as in PyG's own CI; they are left as they are.
"""
from pathlib import Path

from .._out_of_scope import always, skip_out_of_scope

FAST_RGCN = ("tests PyG's FastRGCNConv (the parametrisation "
             "cls=FastRGCNConv), which is imported from torch_geometric.nn "
             "and is no layer of ours; the cls=RGCNConv cases run")
GENERATED_PROPAGATE = (
    "asserts PyG's MessagePassing code generation: the __module__ of the "
    "propagate method PyG generates from a template per class "
    "('GCNConv_propagate') and of its decomposed_layers fallback "
    "('message_passing'), and torch.jit.script of that class")
GCN_NORM_ONLY = ("calls only torch_geometric's gcn_norm function on sparse "
                 "adjacency tensors; no GCNConv (ours or PyG's) is built")

# test name -> [(condition on the case's parameters, reason)]
OUT_OF_SCOPE = {
    'test_rgcn_conv_basic': [
        (lambda p: getattr(p.get('cls'), '__name__', None) == 'FastRGCNConv',
         FAST_RGCN)],
    'test_gcn_conv_with_decomposed_layers': [(always, GENERATED_PROPAGATE)],
    'test_gcn_norm_gradient': [(always, GCN_NORM_ONLY)],
}


def pytest_collection_modifyitems(config, items):
    skip_out_of_scope(items, Path(__file__).resolve().parent, OUT_OF_SCOPE)
