// fusesample::layer_batch -- one LayerWiseLoader batch in one op: the draws of
// fusesample::layer_sample and what the loader's Data holds besides them.
//
// Contract:
//   layer_batch(colptr, row, edge_id?, edge_value?, node_cumsum?, seed,
//               num_samples, rng_seed, num_edges, normalize_weights,
//               weight_dtype, node_attrs)
//     The first eight arguments are layer_sample's. Returns
//     node              layer_sample's node (global ids, the batch first);
//     edge_index [2, m] stack(row, col) of layer_sample (local ids; source,
//                       target), the layers innermost first;
//     edge_weight [m]   layer_sample's weight; with normalize_weights, each
//                       layer's weights into one target divided by their
//                       sum (0 where that sum is 0: fusesample::
//                       normalize_by_target); in weight_dtype;
//     e_id [m]          the edges' ids, -1 for ids >= num_edges (the self-
//                       loops the loader adds have ids num_edges + v);
//     num_sampled_nodes [L + 1], num_sampled_edges [L]: layer_sample's (int64
//                       on the CPU);
//     node_attrs        each tensor's rows of node (gather_rows).
// Why one op: the loader's plain path and its native prefetcher
// (fusesample.LayerBatchPrefetcher) build the same batches from it, and the
// prefetcher's thread, which never takes the GIL, then does all of a batch's
// work. Composite: the device's layer_sample, normalize_by_target and
// gather_rows do the work.
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/stack.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

#include "../common/op_handles.h"

namespace fusesample {
namespace layer {
namespace {

using LayerSampleFn =
    std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
               at::Tensor>(const at::Tensor&, const at::Tensor&,
                           const c10::optional<at::Tensor>&, const c10::optional<at::Tensor>&,
                           const c10::optional<at::Tensor>&, const at::Tensor&,
                           at::IntArrayRef, int64_t);

using LayerBatch = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                              at::Tensor, std::vector<at::Tensor>>;

using NormalizeFn = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                               at::ScalarType);

LayerBatch layer_batch(const at::Tensor& colptr, const at::Tensor& row,
                       const c10::optional<at::Tensor>& edge_id,
                       const c10::optional<at::Tensor>& edge_value,
                       const c10::optional<at::Tensor>& node_cumsum, const at::Tensor& seed,
                       at::IntArrayRef num_samples, int64_t rng_seed, int64_t num_edges,
                       bool normalize_weights, at::ScalarType weight_dtype,
                       at::TensorList node_attrs) {
  static const auto sample = ops::find<LayerSampleFn>("fusesample::layer_sample");
  static const auto normalize =
      ops::find<NormalizeFn>("fusesample::normalize_by_target");
  static const auto& gather = ops::gather_rows_list();
  TORCH_CHECK(at::isFloatingType(weight_dtype),
              "fusesample::layer_batch: 'weight_dtype' must be a floating type, got ",
              weight_dtype);
  auto [node, src, dst, edge, weight, nsn, nse] = sample.call(
      colptr, row, edge_id, edge_value, node_cumsum, seed, num_samples, rng_seed);
  // (layer_sample's edges come layer by layer, target by target: the runs
  // normalize_by_target divides by their sums.)
  weight = normalize_weights ? normalize.call(weight, dst, nse, weight_dtype)
                             : weight.to(weight_dtype);
  // The node ids are the sampler's own output, in range: no check (no sync).
  return {node,
          at::stack({src, dst}),
          weight,
          edge.masked_fill(edge >= num_edges, -1),
          nsn,
          nse,
          gather.call(node_attrs, node, false)};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "layer_batch(Tensor colptr, Tensor row, Tensor? edge_id, "
      "Tensor? edge_value, Tensor? node_cumsum, Tensor seed, int[] num_samples, "
      "int rng_seed, int num_edges, bool normalize_weights, "
      "ScalarType weight_dtype, Tensor[] node_attrs) -> (Tensor node, "
      "Tensor edge_index, Tensor edge_weight, Tensor e_id, "
      "Tensor num_sampled_nodes, Tensor num_sampled_edges, Tensor[] node_attrs)");
}

TORCH_LIBRARY_IMPL(fusesample, CompositeExplicitAutograd, m) {
  m.impl("layer_batch", &layer_batch);
}

}  // namespace layer
}  // namespace fusesample
