// fusesample::random_walk -- first-order (uniform or edge-weighted) and
// second-order (node2vec p, q) random walks with optional restarts, from a
// CSR of out-edges.
//
// Contract:
//   rowptr [N + 1] int64, col [E] int32/int64: the out-neighbours of v are
//     col[rowptr[v]:rowptr[v + 1]], sorted ascending within each row when
//     p != 1 or q != 1 (node2vec's "is x a neighbour of the previous node"
//     test is a binary search there).
//   edge_id [E] int64 (optional): the id reported for a traversed slot
//     (None: the slot index itself).
//   weight_cumsum [E] float64 (optional): inclusive prefix sums of the edge
//     weights within each row; a step draws slot e with probability
//     w_e / (row total). Rows whose total is 0 are sinks.
//   start [S] int64: where each walk begins.
// Returns node [S, walk_length + 1] (node[:, 0] = start) and edge
// [S, walk_length] int64 (with return_edge; else an empty edge tensor, and
// the kernels write half the bytes). A walk at a sink stays where it is, with edge -1
// (torch_cluster's convention); a restart (probability restart_prob per
// step) jumps back to start[i], also with edge -1, and the next step is
// first-order again.
//
// Every draw is keyed by (rng_seed, walk, step, trial) (common/rng.h), so the
// CPU and CUDA kernels return bitwise equal walks for equal inputs, however
// the walks are spread over threads.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "random_walk(Tensor rowptr, Tensor col, Tensor? edge_id, "
      "Tensor? weight_cumsum, Tensor start, int walk_length, float p, "
      "float q, float restart_prob, int rng_seed, bool return_edge) -> "
      "(Tensor node, Tensor edge)");
}
