// fusesample.ShadowBatchPrefetcher -- one epoch of FusedShaDowKHopSampler
// batches (fusesample::shadow_subgraph), assembled on native threads
// (native_prefetcher.h) that never take the GIL.
//
// Contract:
//   ShadowBatchPrefetcher(colptr, row, edge_id?, roots, offsets, keys, depth,
//                         num_neighbors, replace, parallel_edges, ordered,
//                         union_min_set, hub_factor, budget, node_attrs,
//                         root_attrs, edge_attrs, queue_depth, threads)
//     roots [R] int64, the epoch's roots in batch order on the graph's
//     device; batch b takes roots[offsets[b] : offsets[b + 1]] with key
//     keys[b] (len(offsets) = len(keys) + 1, non-decreasing from 0 to R); the
//     rest as fusesample::shadow_subgraph takes it; queue_depth >= 1 batches
//     kept ready per thread; threads >= 1.
//   next() -> Tensor[]: shadow_subgraph's seven tensors, then its node, root
//     and edge attributes' rows, flattened in that order; [] once the epoch
//     is over or closed; an error raised by batch b's op is raised by the
//     call that would have returned it.
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

constexpr const char* kClass = "fusesample.ShadowBatchPrefetcher";

using ShadowFn = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                            at::Tensor, at::Tensor, std::vector<at::Tensor>,
                            std::vector<at::Tensor>, std::vector<at::Tensor>>(
    const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
    const at::Tensor&, int64_t, int64_t, bool, int64_t, bool, bool, int64_t, int64_t,
    int64_t, at::TensorList, at::TensorList, at::TensorList);

class ShadowBatchPrefetcher : public NativePrefetcher {
 public:
  ShadowBatchPrefetcher(at::Tensor colptr, at::Tensor row, std::optional<at::Tensor> edge_id,
                        at::Tensor roots, std::vector<int64_t> offsets,
                        std::vector<int64_t> keys, int64_t depth, int64_t num_neighbors,
                        bool replace, bool parallel_edges, bool ordered,
                        int64_t union_min_set, int64_t hub_factor, int64_t budget,
                        std::vector<at::Tensor> node_attrs,
                        std::vector<at::Tensor> root_attrs,
                        std::vector<at::Tensor> edge_attrs, int64_t queue_depth,
                        int64_t threads)
      : NativePrefetcher(static_cast<int64_t>(keys.size()), queue_depth, threads),
        colptr_(std::move(colptr)), row_(std::move(row)), edge_id_(std::move(edge_id)),
        roots_(std::move(roots)), offsets_(std::move(offsets)), keys_(std::move(keys)),
        depth_(depth), num_neighbors_(num_neighbors), replace_(replace),
        parallel_edges_(parallel_edges), ordered_(ordered),
        union_min_set_(union_min_set), hub_factor_(hub_factor), budget_(budget),
        node_attrs_(std::move(node_attrs)), root_attrs_(std::move(root_attrs)),
        edge_attrs_(std::move(edge_attrs)) {
    check_csc(kClass, colptr_, row_, edge_id_);
    check_node_ids(kClass, "roots", roots_, colptr_);
    TORCH_CHECK(offsets_.size() == keys_.size() + 1 && offsets_.front() == 0 &&
                    offsets_.back() == roots_.numel() &&
                    std::is_sorted(offsets_.begin(), offsets_.end()),
                kClass, ": 'offsets' must rise from 0 to the number of roots (",
                roots_.numel(), ") with one entry per key and one more");
    std::vector<at::Tensor> inputs{colptr_, row_, roots_};
    if (edge_id_) inputs.push_back(*edge_id_);
    for (const auto* attrs : {&node_attrs_, &root_attrs_, &edge_attrs_})
      inputs.insert(inputs.end(), attrs->begin(), attrs->end());
    start(colptr_.device(), inputs);
  }

  ~ShadowBatchPrefetcher() override { close(); }

 private:
  std::vector<at::Tensor> produce(int64_t b) override {
    static const auto op = ops::find<ShadowFn>("fusesample::shadow_subgraph");
    auto [n_id, batch, ptr, root_n_id, src, dst, e_id, nodes, roots, edges] =
        op.call(colptr_, row_, edge_id_, roots_.slice(0, offsets_[b], offsets_[b + 1]),
                depth_, num_neighbors_, replace_, keys_[b], parallel_edges_, ordered_,
                union_min_set_, hub_factor_, budget_, node_attrs_, root_attrs_,
                edge_attrs_);
    std::vector<at::Tensor> out{n_id, batch, ptr, root_n_id, src, dst, e_id};
    for (const auto* rows : {&nodes, &roots, &edges})
      out.insert(out.end(), rows->begin(), rows->end());
    return out;
  }

  const at::Tensor colptr_, row_;
  const std::optional<at::Tensor> edge_id_;
  const at::Tensor roots_;
  const std::vector<int64_t> offsets_, keys_;
  const int64_t depth_, num_neighbors_;
  const bool replace_, parallel_edges_, ordered_;
  const int64_t union_min_set_, hub_factor_, budget_;
  const std::vector<at::Tensor> node_attrs_, root_attrs_, edge_attrs_;
};

}  // namespace

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.class_<ShadowBatchPrefetcher>("ShadowBatchPrefetcher")
      .def(torch::init<at::Tensor, at::Tensor, std::optional<at::Tensor>, at::Tensor,
                       std::vector<int64_t>, std::vector<int64_t>, int64_t, int64_t, bool,
                       bool, bool, int64_t, int64_t, int64_t, std::vector<at::Tensor>,
                       std::vector<at::Tensor>, std::vector<at::Tensor>, int64_t,
                       int64_t>())
      .def("next", [](const c10::intrusive_ptr<ShadowBatchPrefetcher>& self) {
        return self->next();
      })
      .def("close", [](const c10::intrusive_ptr<ShadowBatchPrefetcher>& self) {
        self->close();
      });
}

}  // namespace fusesample
