// fusesample::shadow_subgraph -- one FusedShaDowKHopSampler batch in one op:
// every root's depth-hop sample (neighbor_sample, disjoint), its node set
// sorted by global id, and the subgraph each set induces.
//
// Contract:
//   shadow_subgraph(colptr, row, edge_id?, roots, depth, num_neighbors,
//                   replace, rng_seed, parallel_edges, ordered,
//                   union_min_set, hub_factor, budget, node_attrs,
//                   root_attrs, edge_attrs)
//     colptr/row/edge_id: the in-edge CSC with every target's sources sorted;
//     roots [B] int64 (ids in range; with depth > 0 neighbor_sample checks);
//     parallel_edges: whether a list may hold a value twice; ordered: the
//     edges come by (target, source) as a SparseTensor batch's, else by
//     (source, target) as PyG's edge_index batch; from union_min_set nodes
//     per root on, every distinct node's list is first cut down to the
//     batch's nodes (induced_subgraph); hub_factor and budget are
//     grouped_induced_edges'.
//   Returns n_id [n] (every root's set ascending, the roots' sets one after
//   the other), batch [n] (the root of each), ptr [B + 1], root_n_id [B]
//   (each root's position), src, dst [m] (local ids of the induced edges'
//   ends), e_id [m], and the attributes' rows: node_attrs at n_id, root_attrs
//   at roots (n_id[root_n_id]), edge_attrs at e_id.
// These are the tensors of pyg_fusesample.loader.fused_shadow's Python path
// (FusedShaDowKHopSampler.sample before this op), bit for bit. Why one op:
// the sampler's plain path and its native prefetch threads
// (fusesample.ShadowBatchPrefetcher) build the same batches from it, and the
// threads never take the GIL. Composite: the device's kernels do the work.
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "../common/op_handles.h"
#include "grouped_induced_edges.h"

namespace fusesample {
namespace {

using InducedFn = std::tuple<at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const c10::optional<at::Tensor>&,
    const at::Tensor&);

using ShadowBatch =
    std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
               at::Tensor, std::vector<at::Tensor>, std::vector<at::Tensor>,
               std::vector<at::Tensor>>;

ShadowBatch shadow_subgraph(const at::Tensor& colptr, const at::Tensor& row,
                            const c10::optional<at::Tensor>& edge_id,
                            const at::Tensor& roots, int64_t depth, int64_t num_neighbors,
                            bool replace, int64_t rng_seed, bool parallel_edges,
                            bool ordered, int64_t union_min_set, int64_t hub_factor,
                            int64_t budget, at::TensorList node_attrs,
                            at::TensorList root_attrs, at::TensorList edge_attrs) {
  static const auto& sample = ops::neighbor_sample();
  static const auto induced = ops::find<InducedFn>("fusesample::induced_subgraph");
  static const auto& gather = ops::gather_rows_list();
  TORCH_CHECK(depth >= 0, "fusesample::shadow_subgraph: 'depth' must be >= 0, got ", depth);
  const int64_t N = colptr.numel() - 1;
  const int64_t B = roots.numel();
  const auto options = roots.options();
  at::Tensor node = roots, group = at::arange(B, options);
  if (depth > 0 && B > 0) {
    const std::vector<int64_t> fanouts(depth, num_neighbors);
    auto out = sample.call(colptr, row, edge_id, roots, fanouts, replace,
                           /*disjoint=*/true, rng_seed, /*fused=*/true, 1, {}, {}, {},
                           c10::nullopt, c10::nullopt, false, c10::nullopt);
    node = std::get<0>(out);
    group = std::get<4>(out);
  }

  // Every root's set sorted by node id, roots one after the other.
  auto [key, perm] = at::sort(group * N + node);
  const at::Tensor n_id = ops::take(node, perm);
  group = ops::take(group, perm);
  const int64_t n = n_id.numel();
  const at::Tensor ptr = at::cat(
      {at::zeros({1}, options), at::bincount(group, c10::nullopt, B).cumsum(0)});
  const at::Tensor root_n_id = at::searchsorted(key, at::arange(B, options) * N + roots);

  // In-edge lists: the neighbour is the source, the list's node the target.
  at::Tensor ptr_g = colptr, nbr = row, set_node = n_id;
  c10::optional<at::Tensor> ids = edge_id;
  int64_t num = N;
  if (n >= union_min_set * std::max<int64_t>(B, 1)) {
    // Large sets: cut every distinct node's list down to the batch's nodes
    // once, then the grouped pass reads those short lists.
    auto [distinct, inverse, counts] = at::_unique2(n_id, true, true, false);
    auto [sub_row, sub_col, sub_edge] = induced.call(colptr, row, edge_id, distinct);
    num = distinct.numel();
    ptr_g = at::cat({at::zeros({1}, sub_col.options()),
                     at::bincount(sub_col, c10::nullopt, num).cumsum(0)});
    nbr = sub_row;
    ids = sub_edge;
    set_node = inverse;
    key = group * num + inverse;
  }
  auto [src, dst, e_id] = grouped_induced_edges(ptr_g, nbr, ids, set_node, group, key, num,
                                                parallel_edges, ordered, hub_factor, budget);
  if (!ordered && src.numel() > 0) {
    const at::Tensor order =
        std::get<1>(at::sort(src * std::max<int64_t>(n, 1) + dst, /*stable=*/true, 0, false));
    src = ops::take(src, order);
    dst = ops::take(dst, order);
    e_id = ops::take(e_id, order);
  }
  // The ids are the sampler's own output, in range: no check (no sync).
  return {n_id,
          group,
          ptr,
          root_n_id,
          src,
          dst,
          e_id,
          gather.call(node_attrs, n_id, false),
          gather.call(root_attrs, ops::take(n_id, root_n_id), false),
          gather.call(edge_attrs, e_id, false)};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "shadow_subgraph(Tensor colptr, Tensor row, Tensor? edge_id, Tensor roots, "
      "int depth, int num_neighbors, bool replace, int rng_seed, bool parallel_edges, "
      "bool ordered, int union_min_set, int hub_factor, int budget, Tensor[] node_attrs, "
      "Tensor[] root_attrs, Tensor[] edge_attrs) -> "
      "(Tensor n_id, Tensor batch, Tensor ptr, Tensor root_n_id, Tensor src, "
      "Tensor dst, Tensor e_id, Tensor[] node_attrs, Tensor[] root_attrs, "
      "Tensor[] edge_attrs)");
}

TORCH_LIBRARY_IMPL(fusesample, CompositeExplicitAutograd, m) {
  m.impl("shadow_subgraph", &shadow_subgraph);
}

}  // namespace fusesample
