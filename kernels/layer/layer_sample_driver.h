// The body of fusesample::layer_sample's CPU path, written in ATen ops; the
// steps that draw (layer_draws.h) and the CPU-specific loops are the
// `Kernels` parameter's. It is also the reference the CUDA path
// (cuda/layer_sample_kernel.cu: the same draws and output order, in fused
// steps over a dense node map, since this composition's ~100 launches and
// host reads a layer slowed a training step beside it) is tested against.
// check_inputs serves both.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/diff.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isin.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/topk.h>
#include <ATen/ops/unique_consecutive.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <tuple>
#include <vector>

#include "../common/checks.h"

namespace fusesample {
namespace layer {

constexpr const char* kOp = "fusesample::layer_sample";

using LayerSampleResult =
    std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
               at::Tensor, at::Tensor>;

inline void check_inputs(const at::Tensor& colptr, const at::Tensor& row,
                         const c10::optional<at::Tensor>& edge_id,
                         const c10::optional<at::Tensor>& edge_value,
                         const c10::optional<at::Tensor>& node_cumsum,
                         const at::Tensor& seed, at::IntArrayRef num_samples) {
  check_csc(kOp, colptr, row, edge_id);
  check_graph_values(kOp, "colptr", colptr, "row", row,
                              colptr.numel() - 1);
  check_slot_values(kOp, "edge_value", edge_value, at::kDouble, "row", row,
                    "colptr", colptr);
  if (node_cumsum.has_value()) {
    check_1d(kOp, "node_cumsum", *node_cumsum);
    check_dtype(kOp, "node_cumsum", *node_cumsum, at::kDouble);
    check_same_device(kOp, "node_cumsum", *node_cumsum, "colptr", colptr);
    TORCH_CHECK(node_cumsum->numel() == colptr.numel() - 1, kOp,
                ": 'node_cumsum' needs one entry per node (",
                colptr.numel() - 1, "), got ", node_cumsum->numel());
    // (A FastGCN draw searches the prefix sums: a graph without nodes has
    // none to search. A zero total is the caller's to refuse: reading it
    // here would cost a GPU a synchronisation per call.)
    for (size_t l = 0; l < num_samples.size(); ++l)
      TORCH_CHECK(num_samples[l] == 0 || node_cumsum->numel() > 0, kOp,
                  ": FastGCN cannot draw from a graph without nodes "
                  "('num_samples[", l, "]' is ", num_samples[l], ")");
  }
  check_node_ids(kOp, "seed", seed, colptr);
  for (size_t l = 0; l < num_samples.size(); ++l)
    TORCH_CHECK(num_samples[l] >= -1, kOp, ": 'num_samples[", l, "]' is ",
                num_samples[l], "; use a count >= 0, or -1 for all candidates");
}

// The op's outputs from the per-layer parts (every device's path builds
// them layer by layer): the layers' edges concatenated, innermost first, and
// the counts as CPU int64 tensors.
inline LayerSampleResult layers_result(const at::Tensor& node,
                                       const std::vector<at::Tensor>& rows,
                                       const std::vector<at::Tensor>& cols,
                                       const std::vector<at::Tensor>& edges,
                                       const std::vector<at::Tensor>& weights,
                                       const std::vector<int64_t>& num_sampled_nodes,
                                       const std::vector<int64_t>& num_sampled_edges) {
  const auto index = node.options();
  const auto cat_or_empty = [](const std::vector<at::Tensor>& parts,
                               const at::TensorOptions& options) {
    return parts.empty() ? at::empty({0}, options) : at::cat(parts);
  };
  const auto host = at::TensorOptions().dtype(at::kLong);
  return {node,
          cat_or_empty(rows, index),
          cat_or_empty(cols, index),
          cat_or_empty(edges, index),
          cat_or_empty(weights, index.dtype(at::kDouble)),
          at::tensor(num_sampled_nodes, host),
          at::tensor(num_sampled_edges, host)};
}

// Kernels provides (every tensor argument contiguous, int64 unless named)
//   Tensor segment_of(ends, m)
//     -> the segment of each of the m positions [0, m), for consecutive
//        segments ending at `ends` (the inclusive prefix sums of their
//        lengths, the last one m): position i lies in the segment j with
//        ends[j-1] <= i < ends[j], what searchsorted(ends, i, right=True)
//        finds. One launch where the ATen composition took five.
//   Tensor in_edge_slots(colptr, node, ends, tgt)
//     -> the CSC slot of each position i of node's in-edges laid out target
//        by target (ends as above, tgt = segment_of(ends, m)):
//        colptr[node[tgt[i]]] + i - (the start of tgt[i]'s segment).
//   std::tuple<Tensor, Tensor> ladies_keys(seg_ptr, val2, cand, rng_seed, l)
//     -> importance q and key of every candidate (layer_draws.h: ladies_key)
//   Tensor fastgcn_draws(node_cumsum, s, rng_seed, l)
//     -> s node ids (layer_draws.h: fastgcn_draw)
//   Tensor sorted_position(sorted, query)
//     -> searchsorted(sorted, query), int64 ids (left).
template <class Kernels>
LayerSampleResult layer_sample_driver(
    const at::Tensor& colptr_arg, const at::Tensor& row,
    const c10::optional<at::Tensor>& edge_id,
    const c10::optional<at::Tensor>& edge_value,
    const c10::optional<at::Tensor>& node_cumsum_arg, const at::Tensor& seed,
    at::IntArrayRef num_samples, int64_t rng_seed) {
  check_inputs(colptr_arg, row, edge_id, edge_value, node_cumsum_arg, seed,
               num_samples);
  const at::Tensor colptr = colptr_arg.contiguous();  // (Kernels' contract)
  // The draw kernels read the prefix sums as a flat array.
  const auto node_cumsum =
      node_cumsum_arg.has_value()
          ? c10::optional<at::Tensor>(node_cumsum_arg->contiguous())
          : c10::nullopt;
  const int64_t num_nodes = colptr.numel() - 1;
  const auto index = seed.options();
  const auto real = seed.options().dtype(at::kDouble);
  if (seed.numel() > 0) {
    const auto range = at::aminmax(seed);
    const int64_t lo = std::get<0>(range).item<int64_t>();
    const int64_t hi = std::get<1>(range).item<int64_t>();
    TORCH_CHECK(lo >= 0 && hi < num_nodes, kOp, ": 'seed' holds ids outside [0, ",
                num_nodes, ")");
  }
  const bool fastgcn = node_cumsum.has_value();
  at::Tensor node_weight, total;  // FastGCN: importance per node, and its sum
  if (fastgcn) {
    node_weight = at::diff(*node_cumsum, 1, 0, at::zeros({1}, real));
    total = num_nodes > 0 ? node_cumsum->select(0, num_nodes - 1)
                          : at::zeros({}, real);
  }

  at::Tensor node = seed.contiguous();
  std::vector<at::Tensor> rows, cols, edges, weights;
  std::vector<int64_t> num_sampled_nodes{seed.numel()}, num_sampled_edges;
  for (int64_t l = 0; l < static_cast<int64_t>(num_samples.size()); ++l) {
    const int64_t s = num_samples[l];
    // The targets' in-edges, target by target in CSC order.
    const auto ends = (colptr.index_select(0, node + 1) -
                       colptr.index_select(0, node)).cumsum(0);
    const int64_t m = node.numel() ? ends[-1].item<int64_t>() : 0;
    // The target of every slot position, and its slot. (Not
    // repeat_interleave, whose CPU kernel costs milliseconds per call at any
    // size.)
    const auto tgt = Kernels::segment_of(ends, m);
    const auto slot = Kernels::in_edge_slots(colptr, node, ends, tgt);
    const auto src = row.index_select(0, slot).to(at::kLong);
    const auto val = edge_value.has_value() ? edge_value->index_select(0, slot)
                                            : at::ones({m}, real);

    // The drawn nodes (ascending ids), each edge's source probability and,
    // under FastGCN, how often its source was drawn.
    at::Tensor chosen, p_src, mult;
    bool exact = false;
    if (!fastgcn) {
      // Candidates with their in-edges' squared values, each group in slot
      // order: the order ladies_key sums them in on every device.
      const auto by_source = at::sort(src, /*stable=*/true, 0, false);
      const auto& order = std::get<1>(by_source);
      const auto grouped =
          at::unique_consecutive(std::get<0>(by_source), false, true);
      const auto& cand = std::get<0>(grouped);
      const auto& counts = std::get<2>(grouped);
      const auto seg_ptr = at::cat({at::zeros({1}, index), counts.cumsum(0)});
      const std::tuple<at::Tensor, at::Tensor> keys = Kernels::ladies_keys(
          seg_ptr, (val * val).index_select(0, order), cand, rng_seed, l);
      const at::Tensor& q = std::get<0>(keys);
      const at::Tensor positive = q > 0;
      const int64_t live = positive.sum().item<int64_t>();
      if (s < 0 || s >= live) {
        chosen = cand.masked_select(positive);
        exact = true;
      } else if (s == 0) {  // nothing drawn, nothing to correct for
        chosen = at::empty({0}, index);
        exact = true;
      } else {
        const auto pick = std::get<1>(at::topk(std::get<1>(keys), s, 0,
                                               /*largest=*/false, false));
        chosen = std::get<0>(at::sort(cand.index_select(0, pick)));
      }
      const auto q_sorted = q.index_select(
          0, Kernels::segment_of(seg_ptr.narrow(0, 1, cand.numel()), m));
      p_src = at::empty_like(q_sorted).scatter_(0, order, q_sorted) / q.sum();
    } else {
      if (s < 0) {
        chosen = (node_weight > 0).nonzero().view(-1);
        exact = true;
      } else {
        const auto drawn = at::_unique2(at::Tensor(
            Kernels::fastgcn_draws(*node_cumsum, s, rng_seed, l)), true, false,
            true);
        chosen = std::get<0>(drawn);
        mult = std::get<2>(drawn);
      }
      p_src = node_weight.index_select(0, src) / total;
    }

    // Layer l + 1's targets: this layer's, then the new drawn nodes.
    const auto fresh = chosen.masked_select(
        at::isin(chosen, node, /*assume_unique=*/true, /*invert=*/true));
    node = at::cat({node, fresh});
    num_sampled_nodes.push_back(fresh.numel());

    // Kept in-edges: LADIES keeps those from any target of layer l + 1,
    // FastGCN those from a drawn node.
    const auto& pool = fastgcn ? chosen : node;
    at::Tensor keep = at::zeros({m}, index.dtype(at::kBool));
    at::Tensor local, where;
    if (pool.numel() > 0 && m > 0) {
      const auto sorted_pool = at::sort(pool);
      where = Kernels::sorted_position(std::get<0>(sorted_pool), src)
                  .clamp_max(pool.numel() - 1);
      keep = std::get<0>(sorted_pool).index_select(0, where) == src;
      local = std::get<1>(sorted_pool).index_select(0, where);  // in pool
    }
    const auto kept = keep.nonzero().view(-1);
    at::Tensor src_local;
    if (fastgcn && kept.numel() > 0) {
      const auto sorted_node = at::sort(node);
      src_local = std::get<1>(sorted_node).index_select(
          0, Kernels::sorted_position(std::get<0>(sorted_node),
                                      src.index_select(0, kept)));
    } else {
      src_local = kept.numel() > 0 ? local.index_select(0, kept)
                                   : at::empty({0}, index);
    }
    rows.push_back(src_local);
    cols.push_back(tgt.index_select(0, kept));
    const auto kept_slot = slot.index_select(0, kept);
    edges.push_back(edge_id.has_value() ? edge_id->index_select(0, kept_slot)
                                        : kept_slot);
    auto w = val.index_select(0, kept);
    if (!exact && kept.numel() > 0) {
      const auto p = p_src.index_select(0, kept);
      auto scale = at::full({1}, static_cast<double>(s), real) * p;
      if (fastgcn) scale = scale / mult.index_select(0, local.index_select(0, kept)).to(at::kDouble);
      w = at::where(p > 0, w / scale, at::zeros_like(w));
    }
    weights.push_back(w);
    num_sampled_edges.push_back(kept.numel());
  }
  return layers_result(node, rows, cols, edges, weights, num_sampled_nodes,
                       num_sampled_edges);
}

}  // namespace layer
}  // namespace fusesample
