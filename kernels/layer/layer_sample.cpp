// fusesample::layer_sample -- layer-wise importance sampling (LADIES and
// FastGCN): per layer a fixed number of nodes for the whole batch, not a
// fan-out per node.
//
// Contract:
//   colptr [N + 1] int64, row [E] int32/int64, edge_id [E] int64 (optional):
//     a CSC, as neighbor_sample reads it (in-edges of v are the slots
//     colptr[v]:colptr[v + 1], sources row[...]).
//   edge_value [E] float64 (optional, default 1): the adjacency value of
//     each slot (e.g. the GCN-normalised A), used for importances and
//     weights.
//   node_cumsum [N] float64 (optional): FastGCN's layer-independent node
//     importance, as inclusive prefix sums over node ids. Absent: LADIES.
//   seed [B] int64: the batch's target nodes, unique.
//   num_samples [L]: nodes drawn per layer, -1 for all candidates.
// Layer l's targets are node[:n_l] (n_0 = B), everything sampled so far.
//   LADIES: the candidates are the sources of the targets' in-edges; c has
//     importance q_c = sum of edge_value^2 over those in-edges (the squared
//     column norm of A restricted to the target rows) and s = num_samples[l]
//     of them are drawn without replacement with probability proportional
//     to q (successive sampling, as exponential keys keyed by node id). The
//     layer's edges are all in-edges of the targets whose source is a target
//     or drawn.
//   FastGCN: s nodes are drawn with replacement, proportionally to the
//     global importance; the layer's edges are the targets' in-edges whose
//     source was drawn.
// The drawn nodes that are new are appended to node in ascending id order
// (so node[:n_{l+1}] holds layer l + 1's targets, as NeighborLoader groups
// its nodes by hop). Each edge gets the importance weight
//   edge_value * m_u / (s * p_u),
// p_u = q_u / sum(q) (LADIES) or the node's global probability (FastGCN),
// m_u its number of draws (FastGCN; 1 for LADIES). A LADIES layer that
// takes all its candidates (s = -1 or s >= their number) is exact, and one
// that draws none (s = 0) keeps only the edges among its targets: both
// weight by edge_value. So does FastGCN's s = -1 (every node of positive
// importance).
// Returns node (global ids), row and col (local ids: source, target), edge
// (edge ids), weight, num_sampled_nodes [L + 1] and num_sampled_edges [L]
// (int64); edges are grouped by layer, innermost first.
//
// Determinism: every draw is keyed by (rng_seed, layer, node id or draw
// index), and the importances that decide the draws are summed in a fixed
// order with separately rounded operations, so the CPU and CUDA kernels
// draw the same nodes. The weights' normalising sum is torch's reduction
// and may differ in the last bits between devices.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "layer_sample(Tensor colptr, Tensor row, Tensor? edge_id, "
      "Tensor? edge_value, Tensor? node_cumsum, Tensor seed, "
      "int[] num_samples, int rng_seed) -> (Tensor node, Tensor row, "
      "Tensor col, Tensor edge, Tensor weight, Tensor num_sampled_nodes, "
      "Tensor num_sampled_edges)");
}
