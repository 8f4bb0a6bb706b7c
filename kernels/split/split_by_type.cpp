// fusesample::split_by_type -- a typed sample (global ids, kernels/sampler)
// turned into per-type lists in one call: what PyG's HeteroSamplerOutput
// holds, laid out so that each type's list is a slice.
//
// Contract. The caller sorts the sample's node types and edge types stably
// (torch.sort(stable=True) of byte keys: one radix pass) and passes, for
// nodes and for edges alike, the order that groups them by type and the
// sorted types themselves:
//   node [N] int64            global node ids of the sample
//   node_order [N] int64      a stable order grouping `node` by type
//   node_type [N] uint8|int32 the types in that order (non-decreasing)
//   node_offset [NT+1] int64  node type t owns global ids [offset[t], offset[t+1])
//   row, col [E] int64        endpoints of the sampled edges, as positions in `node`
//   edge [E] int64            global edge ids
//   edge_order, edge_type, edge_offset   the same for edges (T types)
// Returns
//   node_local [N]:  node[node_order[i]] - node_offset[node_type[i]]
//   edge_index [2E]: edge type t's block starts at 2 * s_t (s_t: its first
//                    position in the sorted order) and holds its n_t rows,
//                    then its n_t cols, each the endpoint's position in its
//                    node type's list -- so block t viewed as [2, n_t] is
//                    that type's edge_index, with no stack
//   edge_local [E]:  edge[edge_order[i]] - edge_offset[edge_type[i]]
// Entries of one type keep the sample's order, so a type's list stays
// grouped by hop as PyG's is.
//
// Why an op: done with tensor ops this is ~20 launches and as many trips
// through the dispatcher per batch, and counting each type's start with
// index_add_ serialises on four atomic counters (0.43 ms of a 3.5 ms
// mag-like [15,10,5] batch on an H200). Here it is three kernels (type
// starts by binary search, nodes, edges) and no host synchronisation.
//
// Checks: shapes, dtypes and devices always. The values (orders in range,
// types sorted and in range, endpoints in range) are checked on the CPU;
// the CUDA kernels write -1 where a value is out of range rather than
// reading out of bounds (the loader passes its own sort's output).
#include <torch/library.h>

namespace fusesample {

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("split_by_type(Tensor node, Tensor node_order, Tensor node_type, "
        "Tensor node_offset, Tensor row, Tensor col, Tensor edge, "
        "Tensor edge_order, Tensor edge_type, Tensor edge_offset) "
        "-> (Tensor node_local, Tensor edge_index, Tensor edge_local)");
}

}  // namespace fusesample
