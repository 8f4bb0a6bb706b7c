// fusesample.LayerBatchPrefetcher -- one epoch of LayerWiseLoader batches
// (fusesample::layer_batch), assembled on native threads (native_prefetcher.h).
//
// A LADIES or FastGCN batch is a few milliseconds of host work, mostly the
// sampler's launches and its reads of sizes (about 50 a batch on a GPU), and
// the models it feeds are small, host-bound steps (~2 ms for a 1,500-node
// batch): two Python threads kept the step at 1.43-1.91x the step on
// pre-sampled batches, taking turns with it on the GIL. These threads never
// take it, and several of them share the epoch, each batch's draws keyed by
// its own key, so the batches are those of the plain path whatever the
// number of threads.
//
// Contract:
//   LayerBatchPrefetcher(colptr, row, edge_id?, edge_value?, node_cumsum?,
//                        seeds, batch_size, keys, num_samples, num_edges,
//                        normalize_weights, weight_dtype, node_attrs, depth,
//                        threads)
//     the graph and rule as fusesample::layer_batch takes them; seeds [S]
//     int64, the epoch's seed nodes in batch order on the graph's device:
//     batch b takes seeds[b * batch_size : (b + 1) * batch_size] with key
//     keys[b] (ceil or floor of S / batch_size keys: drop_last is the
//     caller's); weight_dtype a torch.dtype; depth >= 1 batches kept ready
//     per thread; threads >= 1.
//   next() -> Tensor[]: [node, edge_index, edge_weight, e_id,
//     num_sampled_nodes, num_sampled_edges, *node_attrs[node]] -- layer_batch
//     of that batch; [] once the epoch is over or closed; an error raised by
//     batch b's op is raised by the call that would have returned it.
//   close(): stops the threads (the destructor does too).
#include "native_prefetcher.h"  // first: it includes Python.h

#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "../common/checks.h"
#include "../common/op_handles.h"

namespace fusesample {
namespace {

constexpr const char* kClass = "fusesample.LayerBatchPrefetcher";

using LayerBatchFn = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                                at::Tensor, std::vector<at::Tensor>>(
    const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
    const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, const at::Tensor&,
    at::IntArrayRef, int64_t, int64_t, bool, at::ScalarType, at::TensorList);

class LayerBatchPrefetcher : public NativePrefetcher {
 public:
  LayerBatchPrefetcher(at::Tensor colptr, at::Tensor row, std::optional<at::Tensor> edge_id,
                       std::optional<at::Tensor> edge_value,
                       std::optional<at::Tensor> node_cumsum, at::Tensor seeds,
                       int64_t batch_size, std::vector<int64_t> keys,
                       std::vector<int64_t> num_samples, int64_t num_edges,
                       bool normalize_weights, at::ScalarType weight_dtype,
                       std::vector<at::Tensor> node_attrs, int64_t depth, int64_t threads)
      : NativePrefetcher(static_cast<int64_t>(keys.size()), depth, threads),
        colptr_(std::move(colptr)), row_(std::move(row)), edge_id_(std::move(edge_id)),
        edge_value_(std::move(edge_value)), node_cumsum_(std::move(node_cumsum)),
        seeds_(std::move(seeds)), batch_size_(batch_size), keys_(std::move(keys)),
        num_samples_(std::move(num_samples)), num_edges_(num_edges),
        normalize_weights_(normalize_weights), weight_dtype_(weight_dtype),
        node_attrs_(std::move(node_attrs)) {
    check_csc(kClass, colptr_, row_, edge_id_);
    check_node_ids(kClass, "seeds", seeds_, colptr_);
    check_seed_batches(kClass, seeds_.numel(), keys_.size(), batch_size_);
    std::vector<at::Tensor> inputs{colptr_, row_, seeds_};
    for (const auto* t : {&edge_id_, &edge_value_, &node_cumsum_})
      if (*t) inputs.push_back(**t);
    inputs.insert(inputs.end(), node_attrs_.begin(), node_attrs_.end());
    start(colptr_.device(), inputs);
  }

  ~LayerBatchPrefetcher() override { close(); }

 private:
  std::vector<at::Tensor> produce(int64_t b) override {
    static const auto op = ops::find<LayerBatchFn>("fusesample::layer_batch");
    const int64_t start = b * batch_size_;
    const int64_t end = std::min(start + batch_size_, seeds_.numel());
    auto [node, edge_index, edge_weight, e_id, nsn, nse, attrs] =
        op.call(colptr_, row_, edge_id_, edge_value_, node_cumsum_,
                seeds_.slice(0, start, end), num_samples_, keys_[b], num_edges_,
                normalize_weights_, weight_dtype_, node_attrs_);
    std::vector<at::Tensor> out{node, edge_index, edge_weight, e_id, nsn, nse};
    out.insert(out.end(), attrs.begin(), attrs.end());
    return out;
  }

  const at::Tensor colptr_, row_;
  const std::optional<at::Tensor> edge_id_, edge_value_, node_cumsum_;
  const at::Tensor seeds_;
  const int64_t batch_size_;
  const std::vector<int64_t> keys_, num_samples_;
  const int64_t num_edges_;
  const bool normalize_weights_;
  const at::ScalarType weight_dtype_;
  const std::vector<at::Tensor> node_attrs_;
};

}  // namespace

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.class_<LayerBatchPrefetcher>("LayerBatchPrefetcher")
      .def(torch::init<at::Tensor, at::Tensor, std::optional<at::Tensor>,
                       std::optional<at::Tensor>, std::optional<at::Tensor>, at::Tensor,
                       int64_t, std::vector<int64_t>, std::vector<int64_t>, int64_t, bool,
                       at::ScalarType, std::vector<at::Tensor>, int64_t, int64_t>())
      .def("next", [](const c10::intrusive_ptr<LayerBatchPrefetcher>& self) {
        return self->next();
      })
      .def("close", [](const c10::intrusive_ptr<LayerBatchPrefetcher>& self) {
        self->close();
      });
}

}  // namespace fusesample
