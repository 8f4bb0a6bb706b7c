"""The child process of ``test_bad_inputs.py``: runs malformed-input cases
one after another and prints one JSON line per case, so that a case that
crashes the process (a signal, heap corruption, a lost CUDA context) ends
only this process and the parent can name it.

    python tests/bad_inputs_child.py CASES.json

CASES.json holds ``{"device": "cpu"|"cuda", "cases": [[name, code], ...]}``.
Each case's ``code`` runs (``exec``) in a namespace holding ``torch``,
``pfs`` (pyg_fusesample), ``ops`` (``torch.ops.fusesample``), ``dev`` and
the small graphs of :func:`namespace`. Printed lines:

* ``{"start": name}`` before the case runs;
* ``{"name": name, "ok": true}`` when it returned, or ``{"name": name,
  "ok": false, "type": ..., "mro": [...], "msg": ...}`` when it raised.

On CUDA every case ends with a synchronisation, so an asynchronous error
(a device-side assert, an illegal address) is charged to the case that
caused it; after one the CUDA context is lost, so the result says
``"lost": true``, the process exits (code 3) and the parent starts a new one
for the remaining cases.
"""
import faulthandler
import json
import os
import sys
import warnings


def namespace(dev: str) -> dict:
    import torch
    import pyg_fusesample as pfs

    ops = torch.ops.fusesample
    # A 6-node graph: a ring 0 -> 1 -> ... -> 5 -> 0 plus 0 -> 2.
    N = 6
    ei = torch.tensor([[0, 1, 2, 3, 4, 5, 0], [1, 2, 3, 4, 5, 0, 2]],
                      device=dev)
    E = ei.size(1)
    colptr, row, perm = ops.csc_from_coo(ei[0].cpu(), ei[1].cpu(), N)
    colptr, row, perm = colptr.to(dev), row.to(dev), perm.to(dev)
    # The CSR of the same graph (rows = sources), for walks and SpMM.
    rowptr, col, _ = ops.csc_from_coo(ei[1].cpu(), ei[0].cpu(), N)
    rowptr, col = rowptr.to(dev), col.to(dev)

    def t(values, dtype=torch.long):
        return torch.tensor(values, dtype=dtype, device=dev)

    def data(edge_index=None, **attrs):
        from torch_geometric.data import Data
        attrs.setdefault('x', torch.randn(N, 4, device=dev))
        attrs.setdefault('num_nodes', N)
        return Data(edge_index=ei if edge_index is None else edge_index,
                    **attrs)

    def first(loader):  # the first batch (the graph is built by then)
        return next(iter(loader))

    return dict(torch=torch, pfs=pfs, ops=ops, dev=dev, N=N, E=E, ei=ei,
                data=data, first=first,
                colptr=colptr, row=row, perm=perm, rowptr=rowptr, col=col,
                t=t, x=torch.randn(N, 4, device=dev),
                # Malformed pointer arrays of the same graph (N + 1 entries).
                ptr_desc=t([0, 2, 1, 3, 4, 5, 7]),     # not monotone
                ptr_last_big=t([0, 1, 2, 3, 4, 5, 9]),  # ends past E
                ptr_last_small=t([0, 1, 2, 3, 4, 5, 6]),  # ends before E
                ptr_first_neg=t([-2, 1, 2, 3, 4, 5, 7]),
                ptr_huge=t([0, 1, 2, 3, 4, 5, 2**40]),
                ids_big=t([0, N]), ids_neg=t([-1, 0]),
                ids_huge=t([2**31]), ids_i32max=t([2**31 - 1]))


def main():
    faulthandler.enable()
    warnings.simplefilter('ignore')
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    dev = spec['device']
    base = namespace(dev)
    import torch
    for name, code in spec['cases']:
        print(json.dumps({'start': name}), flush=True)
        lost = False
        try:
            exec(code, dict(base))
            if dev == 'cuda':
                torch.cuda.synchronize()
            result = {'name': name, 'ok': True}
        except BaseException as e:  # noqa: B902 (report every kind)
            msg = str(e)
            lost = dev == 'cuda' and any(
                s in msg for s in ('device-side assert', 'illegal memory',
                                   'misaligned address',
                                   'unspecified launch failure'))
            result = {'name': name, 'ok': False, 'type': type(e).__name__,
                      'mro': [c.__name__ for c in type(e).__mro__],
                      'msg': msg[:4000], 'lost': lost}
        print(json.dumps(result), flush=True)
        if lost:
            # Not sys.exit: finalisation frees CUDA memory, which throws on
            # a lost context and aborts the process.
            os._exit(3)


if __name__ == '__main__':
    main()
