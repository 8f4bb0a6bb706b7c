// fusesample.BatchPrefetcher -- one epoch of FusedNeighborLoader batches,
// assembled on a native background thread (the loader's prefetch='thread').
//
// Why a native thread: a [15, 10] GraphSAGE step is bound by the host's launch
// rate, so every microsecond the training thread spends assembling a batch
// (sampling launch, size read-back, edge_index, feature gathers) adds to the
// step; the thread, queue and streams are native_prefetcher.h's (one worker:
// the lookahead below is sequential).
//
// Contract:
//   BatchPrefetcher(colptr, row, edge_id?, seeds, batch_size, keys,
//                   num_neighbors, replace, disjoint, fused, node_attrs,
//                   edge_attrs, depth, lookahead, edge_time?, seed_time?,
//                   temporal_last, weight_cumsum?)
//     colptr/row/edge_id  the CSC graph of fusesample::neighbor_sample;
//     seeds [S] int64     the epoch's seed nodes in batch order, on the
//                         graph's device; batch b takes
//                         seeds[b * batch_size : (b + 1) * batch_size];
//     keys                one RNG key per batch (so ceil or floor of
//                         S / batch_size batches: drop_last is the caller's);
//     node_attrs          [N, ...] tensors on the graph's device (or, for a
//                         GPU graph, in pinned host memory), gathered by
//                         the batch's node ids; edge_attrs [E, ...] by its
//                         global edge ids (edge_id's values, which must be
//                         < E; E may exceed the CSC's edges);
//     depth >= 1          batches kept ready ahead of the consumer;
//     lookahead           enqueue fused GPU sampling one batch ahead (below);
//     edge_time, temporal_last, weight_cumsum
//                         the op's temporal / weighted rule, as given to
//                         fusesample::neighbor_sample for every batch;
//     seed_time [S]       the seeds' times (temporal), aligned with seeds and
//                         sliced with them.
//   next() -> Tensor[]: [node, edge_index [2, m], edge, batch ([0] unless
//     disjoint), num_sampled_nodes, num_sampled_edges (both int64 on the
//     CPU), *node_attrs[node], *edge_attrs[edge]] -- exactly what
//     fusesample::neighbor_sample and gather_rows_list give for that batch;
//     [] once the epoch is over or closed. An error raised while batch b was
//     assembled is raised by the call that would have returned batch b; the
//     calls after it return [].
//   close(): stops the thread (the destructor does too); a batch being
//     sampled is finished first.
//   Sampling: with lookahead, fused sampling on a GPU is enqueued one batch ahead
//     (fusesample::neighbor_sample_async), so the GPU samples batch b+1
//     while the thread assembles batch b; otherwise fusesample::
//     neighbor_sample samples each batch when its turn comes.
//   Streams (CUDA) and autograd: as native_prefetcher.h says (a stream of
//     its own, handed over with an event; no gradient tracking).
#include "native_prefetcher.h"  // first: it includes Python.h

#include <ATen/core/Tensor.h>
#include <ATen/ops/stack.h>
#include <torch/library.h>

#include <exception>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "../common/checks.h"
#include "../common/op_handles.h"

namespace fusesample {
namespace {

constexpr const char* kClass = "fusesample.BatchPrefetcher";

using SampleAsyncFn = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                                 at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
    const at::Tensor&, at::IntArrayRef, bool, bool, int64_t, int64_t, at::IntArrayRef,
    at::IntArrayRef, at::IntArrayRef, const std::optional<at::Tensor>&,
    const std::optional<at::Tensor>&, bool, const std::optional<at::Tensor>&);

// at_least: the rows are indexed by ids the CSC maps its positions to
// (edge_id), of which the graph may have more than the CSC samples from
// (weighted sampling leaves zero-weight edges out).
void check_attrs(const char* name, const std::vector<at::Tensor>& attrs,
                 int64_t rows, const char* rows_name, const at::Tensor& colptr,
                 bool at_least = false) {
  for (size_t i = 0; i < attrs.size(); ++i) {
    const at::Tensor& t = attrs[i];
    TORCH_CHECK(t.dim() >= 1 && (t.size(0) == rows || (at_least && t.size(0) > rows)),
                kClass, ": '", name, "[", i, "]' must have ", at_least ? "at least " : "",
                rows, " rows (", rows_name, "), got shape ", t.sizes());
    // A GPU gathers pinned host rows in place (gather_rows, zero-copy).
    if (!gpu_reads_pinned(t, colptr))
      check_same_device(kClass, name, t, "colptr", colptr);
  }
}

class BatchPrefetcher : public NativePrefetcher {
 public:
  BatchPrefetcher(at::Tensor colptr, at::Tensor row, std::optional<at::Tensor> edge_id,
                  at::Tensor seeds, int64_t batch_size, std::vector<int64_t> keys,
                  std::vector<int64_t> num_neighbors, bool replace, bool disjoint,
                  bool fused, std::vector<at::Tensor> node_attrs,
                  std::vector<at::Tensor> edge_attrs, int64_t depth, bool lookahead,
                  std::optional<at::Tensor> edge_time, std::optional<at::Tensor> seed_time,
                  bool temporal_last, std::optional<at::Tensor> weight_cumsum)
      : NativePrefetcher(static_cast<int64_t>(keys.size()), depth, /*threads=*/1),
        colptr_(std::move(colptr)), row_(std::move(row)), edge_id_(std::move(edge_id)),
        seeds_(std::move(seeds)), batch_size_(batch_size), keys_(std::move(keys)),
        num_neighbors_(std::move(num_neighbors)), replace_(replace),
        disjoint_(disjoint), fused_(fused), lookahead_(lookahead && fused && colptr_.is_cuda()),
        node_attrs_(std::move(node_attrs)),
        edge_attrs_(std::move(edge_attrs)),
        edge_time_(std::move(edge_time)), seed_time_(std::move(seed_time)),
        temporal_last_(temporal_last), weight_cumsum_(std::move(weight_cumsum)) {
    check_csc(kClass, colptr_, row_, edge_id_);
    check_node_ids(kClass, "seeds", seeds_, colptr_);
    check_fanouts(kClass, num_neighbors_);
    const int64_t num_seeds = seeds_.numel();
    check_seed_batches(kClass, num_seeds, keys_.size(), batch_size_);
    if (seed_time_) {
      TORCH_CHECK(seed_time_->dim() == 1 && seed_time_->numel() == num_seeds, kClass,
                  ": 'seed_time' must hold one time per seed (", num_seeds, "), got shape ",
                  seed_time_->sizes());
      check_same_device(kClass, "seed_time", *seed_time_, "colptr", colptr_);
    }
    check_attrs("node_attrs", node_attrs_, colptr_.numel() - 1, "num_nodes", colptr_);
    check_attrs("edge_attrs", edge_attrs_, row_.numel(), "num_edges", colptr_,
                edge_id_.has_value());
    std::vector<at::Tensor> inputs{colptr_, row_, seeds_};
    for (const auto* t : {&edge_id_, &edge_time_, &seed_time_, &weight_cumsum_})
      if (*t) inputs.push_back(**t);
    for (const auto* attrs : {&node_attrs_, &edge_attrs_})
      inputs.insert(inputs.end(), attrs->begin(), attrs->end());
    start(colptr_.device(), inputs);
  }

  ~BatchPrefetcher() override { close(); }

 private:
  struct Sample {
    std::vector<at::Tensor> tensors;  // the op's outputs
    bool pending = false;             // neighbor_sample_async's, not read yet
    std::optional<c10::Event> launched;  // recorded after its kernels (CUDA)
    std::exception_ptr error;
  };

  // Batch b from its sample. Fused on a GPU, batch b+1's sampling is
  // enqueued before batch b's gathers, so the GPU has it while this thread
  // waits for b's sizes and assembles b (the loader's lookahead, without the
  // GIL).
  std::vector<at::Tensor> produce(int64_t b) override {
    Sample current = b > 0 && lookahead_ ? std::move(ahead_) : sample(b);
    if (lookahead_ && b + 1 < static_cast<int64_t>(keys_.size())) ahead_ = sample(b + 1);
    return assemble(collect(current));
  }

  // Batch b's sampling: fused on a GPU enqueued by
  // fusesample::neighbor_sample_async (buffers and a meta the stream fills),
  // else complete (fusesample::neighbor_sample: per-hop waits per hop, the
  // CPU kernel finishes before it returns).
  // Errors are kept for collect(), so they reach the consumer at batch b.
  Sample sample(int64_t b) noexcept {
    static const auto& sample_now = ops::neighbor_sample();
    static const auto sample_async =
        ops::find<SampleAsyncFn>("fusesample::neighbor_sample_async");
    Sample s;
    try {
      const int64_t start = b * batch_size_;
      const int64_t end = std::min(start + batch_size_, seeds_.numel());
      const at::Tensor seeds = seeds_.slice(0, start, end);
      std::optional<at::Tensor> seed_time;
      if (seed_time_) seed_time = seed_time_->slice(0, start, end);
      if (lookahead_) {
        auto [node, row, col, edge, batch, meta] =
            sample_async.call(colptr_, row_, edge_id_, seeds, num_neighbors_, replace_,
                              disjoint_, keys_[b], /*num_edge_types=*/1, {}, {}, {},
                              edge_time_, seed_time, temporal_last_, weight_cumsum_);
        s.tensors = {node, row, col, edge, batch, meta};
        s.pending = true;
        // (lookahead: on a GPU, whose worker runs on a stream of its own)
        const c10::Device device = colptr_.device();
        s.launched.emplace(device.type());
        s.launched->record(c10::impl::VirtualGuardImpl(device.type()).getStream(device));
      } else {
        auto [node, row, col, edge, batch, nsn, nse, counts] =
            sample_now.call(colptr_, row_, edge_id_, seeds, num_neighbors_, replace_,
                            disjoint_, keys_[b], fused_, /*num_edge_types=*/1, {}, {}, {},
                            edge_time_, seed_time, temporal_last_, weight_cumsum_);
        s.tensors = {node, row, col, edge, batch, nsn, nse};
      }
    } catch (...) {
      s.error = std::current_exception();
    }
    return s;
  }

  // A sample's (node, row, col, edge, batch, num_sampled_nodes,
  // num_sampled_edges), as fusesample::neighbor_sample returns them: an
  // enqueued sample's buffers cut to the sizes in its meta (see the schema of
  // neighbor_sample_async), once the stream has filled it.
  std::vector<at::Tensor> collect(Sample& s) const {
    if (s.error) std::rethrow_exception(s.error);
    if (!s.pending) return std::move(s.tensors);
    if (s.launched) s.launched->synchronize();
    const int64_t hops = static_cast<int64_t>(num_neighbors_.size());
    const at::Tensor& meta = s.tensors[5];
    const int64_t* m = meta.data_ptr<int64_t>();
    TORCH_CHECK(m[3 + 2 * hops] == 0, "fusesample::neighbor_sample: 'seed' holds ids ",
                "outside [0, ", colptr_.numel() - 1, ")");
    const int64_t n = m[0], e = m[1];
    const std::vector<at::Tensor>& t = s.tensors;
    return {t[0].narrow(0, 0, n),
            t[1].narrow(0, 0, e),
            t[2].narrow(0, 0, e),
            t[3].narrow(0, 0, e),
            disjoint_ ? t[4].narrow(0, 0, n) : t[4],
            meta.narrow(0, 2, hops + 1).clone(),
            meta.narrow(0, 3 + hops, hops).clone()};
  }

  // One batch from its sample, as the loader's plain path builds it.
  std::vector<at::Tensor> assemble(std::vector<at::Tensor> sampled) const {
    static const auto& gather = ops::gather_rows_list();
    const at::Tensor &node = sampled[0], &edge = sampled[3];
    std::vector<at::Tensor> out{node,       at::stack({sampled[1], sampled[2]}),
                                edge,       sampled[4],
                                sampled[5], sampled[6]};
    out.reserve(out.size() + node_attrs_.size() + edge_attrs_.size());
    // The ids are the sampler's own output, in range: no check (and no sync).
    for (const at::Tensor& t : gather.call(node_attrs_, node, false)) out.push_back(t);
    for (const at::Tensor& t : gather.call(edge_attrs_, edge, false)) out.push_back(t);
    return out;
  }

  const at::Tensor colptr_, row_;
  const std::optional<at::Tensor> edge_id_;
  const at::Tensor seeds_;
  const int64_t batch_size_;
  const std::vector<int64_t> keys_, num_neighbors_;
  const bool replace_, disjoint_, fused_, lookahead_;
  const std::vector<at::Tensor> node_attrs_, edge_attrs_;
  const std::optional<at::Tensor> edge_time_, seed_time_;
  const bool temporal_last_;
  const std::optional<at::Tensor> weight_cumsum_;
  Sample ahead_;  // the next batch's sample (lookahead; the one worker's)
};

}  // namespace

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.class_<BatchPrefetcher>("BatchPrefetcher")
      .def(torch::init<at::Tensor, at::Tensor, std::optional<at::Tensor>, at::Tensor,
                       int64_t, std::vector<int64_t>, std::vector<int64_t>, bool, bool,
                       bool, std::vector<at::Tensor>, std::vector<at::Tensor>,
                       int64_t, bool, std::optional<at::Tensor>,
                       std::optional<at::Tensor>, bool, std::optional<at::Tensor>>())
      .def("next", [](const c10::intrusive_ptr<BatchPrefetcher>& self) { return self->next(); })
      .def("close", [](const c10::intrusive_ptr<BatchPrefetcher>& self) { self->close(); });
}

}  // namespace fusesample
