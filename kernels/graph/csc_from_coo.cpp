// fusesample::csc_from_coo -- builds the CSC layout the samplers read.
//
// Contract: row, col [E] int64 (edge_index[0] = source, edge_index[1] =
// target), num_nodes N. Returns colptr [N+1] int64, row [E] int64 (sources
// grouped by target; within a target in edge order -- a stable sort) and
// perm [E] int64 (the original id of each CSC slot). Out-of-range ids raise.
// PyG's `to_csc` groups alike but with an unstable sort, so the order within
// a target may differ from NeighborLoader's; the sets are the same.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "csc_from_coo(Tensor row, Tensor col, int num_nodes) -> (Tensor colptr, "
      "Tensor row, Tensor perm)");
}
