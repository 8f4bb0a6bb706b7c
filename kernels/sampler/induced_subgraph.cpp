// fusesample::induced_subgraph -- every edge of the graph whose two endpoints
// are in `node`, in local ids (FusedNeighborLoader's subgraph_type='induced').
//
// Contract: colptr/row/edge_id as in neighbor_sample; node [n] int64 unique
// global ids. Returns row, col (local ids of source and target, grouped by
// target in node order, sources in CSC order) and edge (global edge ids).
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "induced_subgraph(Tensor colptr, Tensor row, Tensor? edge_id, "
      "Tensor node) -> (Tensor row, Tensor col, Tensor edge)");
}
