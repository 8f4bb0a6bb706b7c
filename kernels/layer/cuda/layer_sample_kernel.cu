// CUDA path of fusesample::layer_sample (contract: layer_sample.cpp): the
// steps of layer_steps.cuh, ordered here, on the current stream.
//
// Why not the ATen composition the CPU runs (layer_sample_driver.h): a layer
// was ~100 small launches and ~8 host syncs there (sorts for the sources'
// grouping, unique, topk, isin, searchsorted, nonzero), which a loader's
// background thread issued beside the training step's own launches and
// slowed it (the LADIES/FastGCN step at 1.4-1.5x its pre-sampled floor). Here
// a dense map (global id -> local id, one int32 per graph node, per call)
// answers membership in one read, selections are scans, and the host reads
// the counts it must size arrays by once per layer (and once for the seeds'
// check): L + 1 syncs a batch, and 66 launches a two-layer LADIES batch of
// LayerWiseLoader (46 FastGCN) where the composition took 215 (152).
//
// The draws are the driver's (layer_draws.h, importances summed per
// candidate in position order through a stable sort), and every output keeps
// the driver's order, so the devices agree on the nodes and edges; only the
// LADIES weights' normalising sum (a grid reduction here, torch's sum there)
// may differ in the last bits.
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <limits>
#include <vector>

#include "../../common/cub_call.h"
#include "../../common/grid.h"
#include "../layer_sample_driver.h"
#include "layer_steps.cuh"

namespace fusesample {
namespace layer {
namespace {

using namespace fused;

constexpr int64_t kInt32Limit = std::numeric_limits<int32_t>::max();

template <class Kernel, class... Args>
void launch(Kernel kernel, int64_t items, cudaStream_t stream, Args... args) {
  if (items <= 0) return;
  kernel<<<grid_blocks(items, kThreads, 8), kThreads, 0, stream>>>(args...);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <class T>
T* ptr_or_null(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

template <class T>
const T* ptr_or_null(const c10::optional<at::Tensor>& t) {
  return t.has_value() ? t->data_ptr<T>() : nullptr;
}

// A layer's in-edge positions (InEdges: position order), its candidates,
// and its kept edges at capacity (the host narrows them to the count).
struct InEdges {
  int64_t m;
  at::Tensor tgt, slot, src, identity, val2;
};
struct Candidates {
  int64_t capacity;
  at::Tensor cand, pick;          // pick undefined: all cand[:num_cand]
  at::Tensor q, run_of, q_total;  // LADIES
  at::Tensor mult;                // FastGCN, drawn with replacement
};
struct Kept {
  at::Tensor row, col, edge, weight;
};

template <class index_t>
class FusedLayerSampler {
 public:
  FusedLayerSampler(const at::Tensor& colptr, const at::Tensor& row,
                    const c10::optional<at::Tensor>& edge_id,
                    const c10::optional<at::Tensor>& edge_value,
                    const c10::optional<at::Tensor>& node_cumsum,
                    int64_t rng_seed)
      : colptr_(colptr), row_(row), edge_id_(edge_id), edge_value_(edge_value),
        cum_(node_cumsum), rng_seed_(static_cast<uint64_t>(rng_seed)),
        num_nodes_(colptr.numel() - 1), id_bits_(radix_key_bits(num_nodes_)),
        index_(colptr.options()), stream_(at::cuda::getCurrentCUDAStream()) {
    TORCH_CHECK(num_nodes_ < kInt32Limit, kOp,
                ": the CUDA kernel maps node ids to int32 local ids; the graph "
                "has ", num_nodes_, " nodes");
  }

  LayerSampleResult run(const at::Tensor& seed, at::IntArrayRef num_samples) {
    const int64_t b = seed.numel();
    map_ = at::full({num_nodes_}, kUnmapped, index_.dtype(at::kInt));
    counters_ = at::zeros({kCounterSlots}, index_);
    at::Tensor node = at::empty({b}, index_);
    launch(map_seeds_kernel, b, stream_, seed.data_ptr<int64_t>(), b,
           num_nodes_, map(), node.data_ptr<int64_t>(), counters());
    at::Tensor ends = target_ends(node, b, nullptr);
    std::vector<int64_t> host = read_counters();
    TORCH_CHECK(host[kBadSeed] == 0, kOp, ": 'seed' holds ids outside [0, ",
                num_nodes_, ")");
    int64_t n = b, m = b > 0 ? host[kNextPositions] : 0;

    std::vector<at::Tensor> rows, cols, edges, weights;
    std::vector<int64_t> num_sampled_nodes{b}, num_sampled_edges;
    const int64_t layers = static_cast<int64_t>(num_samples.size());
    for (int64_t l = 0; l < layers; ++l) {
      const int64_t s = num_samples[l];
      C10_CUDA_CHECK(cudaMemsetAsync(counter(kNumCand), 0,
                                     (kCounterSlots - kNumCand) * sizeof(int64_t),
                                     stream_));
      const InEdges in = in_edges(node, ends, n, m);
      const Candidates cand = cum_.has_value() ? fastgcn_candidates(s, l)
                                               : ladies_candidates(in, s, l);
      const at::Tensor fresh = append_fresh(cand, n);
      const Kept kept = kept_edges(in, cand, s);
      // The next layer's in-edge layout before the read, so that one read
      // serves both layers (its targets: node, then the fresh ones counted).
      const bool last = l + 1 == layers;
      at::Tensor next_node, next_ends;
      if (!last) {
        next_node = at::cat({node, fresh});
        next_ends = target_ends(next_node, n, counter(kFresh));
      }
      host = read_counters();
      const int64_t num_fresh = host[kFresh], num_kept = host[kKept];
      if (last) {
        node = at::cat({node, fresh.narrow(0, 0, num_fresh)});
      } else {
        node = next_node.narrow(0, 0, n + num_fresh);
        ends = next_ends.narrow(0, 0, n + num_fresh);
        m = n + num_fresh > 0 ? host[kNextPositions] : 0;
      }
      n += num_fresh;
      rows.push_back(kept.row.narrow(0, 0, num_kept));
      cols.push_back(kept.col.narrow(0, 0, num_kept));
      edges.push_back(kept.edge.narrow(0, 0, num_kept));
      weights.push_back(kept.weight.narrow(0, 0, num_kept));
      num_sampled_nodes.push_back(num_fresh);
      num_sampled_edges.push_back(num_kept);
    }
    return layers_result(node, rows, cols, edges, weights, num_sampled_nodes,
                         num_sampled_edges);
  }

 private:
  // The counters (kernels index them by Counter) and one of them (the
  // functors read it).
  int64_t* counters() { return counters_.data_ptr<int64_t>(); }
  int64_t* counter(Counter c) { return counters() + c; }
  int32_t* map() { return map_.data_ptr<int32_t>(); }

  // The counters, through a pinned buffer (a pageable copy is staged by
  // the driver) and a wait for this stream only.
  std::vector<int64_t> read_counters() {
    if (!host_counters_.defined())
      host_counters_ = at::empty({kCounterSlots},
                                 at::TensorOptions().dtype(at::kLong).pinned_memory(true));
    C10_CUDA_CHECK(cudaMemcpyAsync(host_counters_.data_ptr<int64_t>(),
                                   counters_.data_ptr<int64_t>(),
                                   kCounterSlots * sizeof(int64_t),
                                   cudaMemcpyDeviceToHost, stream_));
    C10_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const int64_t* p = host_counters_.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + kCounterSlots);
  }

  template <class Input>
  void inclusive_sum(Input in, int64_t count, int64_t* out) {
    if (count == 0) return;
    const auto items = thrust::make_transform_iterator(
        thrust::counting_iterator<int64_t>(0), in);
    cub_call(index_, [&](void* temp, size_t& bytes) {
      return cub::DeviceScan::InclusiveSum(temp, bytes, items, out,
                                           static_cast<int>(count), stream_);
    });
  }

  // The inclusive prefix sums of the in-degrees of targets node[0 : n +
  // *extra] over all of node's entries (past the targets they repeat the
  // total); the total also goes to counters[kNextPositions].
  at::Tensor target_ends(const at::Tensor& node, int64_t n, const int64_t* extra) {
    const int64_t count = node.numel();
    TORCH_CHECK(count < kInt32Limit, kOp, ": ", count, " targets in a layer");
    at::Tensor ends = at::empty({count}, index_);
    if (count == 0) return ends;
    inclusive_sum(TargetDegree{colptr_.data_ptr<int64_t>(),
                               node.data_ptr<int64_t>(), n, extra, num_nodes_},
                  count, ends.data_ptr<int64_t>());
    counters_.narrow(0, kNextPositions, 1).copy_(ends.narrow(0, count - 1, 1));
    return ends;
  }

  InEdges in_edges(const at::Tensor& node, const at::Tensor& ends, int64_t n,
                   int64_t m) {
    TORCH_CHECK(m < kInt32Limit, kOp, ": a layer's targets have ", m,
                " in-edges; the CUDA kernel handles fewer than 2^31");
    InEdges in{m, at::empty({m}, index_), at::empty({m}, index_),
               at::empty({m}, index_), at::empty({m}, index_.dtype(at::kInt)),
               cum_.has_value() ? at::Tensor()
                                : at::empty({m}, index_.dtype(at::kDouble))};
    launch(in_edges_kernel<index_t>, m, stream_, colptr_.data_ptr<int64_t>(),
           row_.data_ptr<index_t>(), ptr_or_null<double>(edge_value_),
           node.data_ptr<int64_t>(), ends.data_ptr<int64_t>(), n, m,
           in.tgt.data_ptr<int64_t>(), in.slot.data_ptr<int64_t>(),
           in.src.data_ptr<int64_t>(), in.identity.data_ptr<int32_t>(),
           ptr_or_null<double>(in.val2));
    return in;
  }

  // LADIES: the distinct sources are the candidates (runs of the stably
  // source-sorted positions), their importances and keys, and the drawn ones.
  Candidates ladies_candidates(const InEdges& in, int64_t s, int64_t l) {
    // s = 0 draws nothing and weighs by the values: no candidates needed.
    if (s == 0) return Candidates{0, at::empty({0}, index_)};
    const int64_t m = in.m;
    const auto real = index_.dtype(at::kDouble);
    Candidates c{m};
    at::Tensor sorted_src = at::empty({m}, index_);
    at::Tensor order = at::empty({m}, index_.dtype(at::kInt));
    at::Tensor run_end = at::empty({m}, index_);
    at::Tensor start = at::empty({m + 1}, index_);
    c.cand = at::empty({m}, index_);
    c.run_of = at::empty({m}, index_);
    c.q = at::empty({m}, real);
    c.q_total = at::empty({1}, real);
    at::Tensor key = at::empty({m}, real);
    if (m > 0) {
      cub_call(index_, [&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(
            temp, bytes, in.src.data_ptr<int64_t>(), sorted_src.data_ptr<int64_t>(),
            in.identity.data_ptr<int32_t>(), order.data_ptr<int32_t>(),
            static_cast<int>(m), 0, id_bits_, stream_);
      });
      inclusive_sum(RunHead{sorted_src.data_ptr<int64_t>()}, m,
                    run_end.data_ptr<int64_t>());
      launch(candidate_runs_kernel, m, stream_, sorted_src.data_ptr<int64_t>(),
             order.data_ptr<int32_t>(), run_end.data_ptr<int64_t>(), m,
             c.run_of.data_ptr<int64_t>(), start.data_ptr<int64_t>(),
             c.cand.data_ptr<int64_t>(), counters());
      launch(ladies_keys_kernel, m, stream_, start.data_ptr<int64_t>(),
             c.cand.data_ptr<int64_t>(),
             SortedVal2{in.val2.data_ptr<double>(), order.data_ptr<int32_t>()},
             counters(), m, rng_seed_, l, c.q.data_ptr<double>(),
             key.data_ptr<double>());
      const int64_t blocks = grid_blocks(m, kTotalThreads, 4);
      const at::Tensor partial_sum = at::empty({blocks}, real);
      const at::Tensor partial_live = at::empty({blocks}, index_);
      importance_total_kernel<<<blocks, kTotalThreads, 0, stream_>>>(
          c.q.data_ptr<double>(), counters(), partial_sum.data_ptr<double>(),
          partial_live.data_ptr<int64_t>(), c.q_total.data_ptr<double>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (s > 0 && s <= kMaxTournament) {
      c.pick = smallest_keys(key, m, s);
      return c;
    }
    c.pick = at::empty({m}, index_.dtype(at::kByte));
    at::Tensor key_sorted, cand_sorted;
    if (s > 0 && m > 0) {  // the s smallest keys (s < 0: every positive q)
      key_sorted = at::empty({m}, real);
      cand_sorted = at::empty({m}, index_.dtype(at::kInt));
      cub_call(index_, [&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(
            temp, bytes, key.data_ptr<double>(), key_sorted.data_ptr<double>(),
            in.identity.data_ptr<int32_t>(), cand_sorted.data_ptr<int32_t>(),
            static_cast<int>(m), 0, 64, stream_);
      });
    }
    launch(ladies_pick_kernel, m, stream_, ptr_or_null<double>(key_sorted),
           ptr_or_null<int32_t>(cand_sorted), c.q.data_ptr<double>(), m, s,
           c.pick.data_ptr<uint8_t>());
    return c;
  }

  // pick[g] = 1 for the s smallest finite keys of the candidates (key[0 :
  // *num_cand] of `capacity`): the rounds of smallest_keys_round_kernel.
  at::Tensor smallest_keys(const at::Tensor& key, int64_t capacity, int64_t s) {
    at::Tensor pick = at::zeros({capacity}, index_.dtype(at::kByte));
    const double* round_key = key.data_ptr<double>();
    const int32_t* round_index = nullptr;  // (the first round: the candidate)
    const int64_t* live = counter(kNumCand);
    at::Tensor kept_key, kept_index;
    for (int64_t n = capacity; n > 0;) {
      const int64_t chunks = (n + kSelectChunk - 1) / kSelectChunk;
      const bool last = chunks == 1;
      at::Tensor next_key, next_index;
      if (!last) {
        next_key = at::empty({chunks * s}, key.options());
        next_index = at::empty({chunks * s}, index_.dtype(at::kInt));
      }
      smallest_keys_round_kernel<<<chunks, kSelectThreads, 0, stream_>>>(
          round_key, round_index, n, live, s, ptr_or_null<double>(next_key),
          ptr_or_null<int32_t>(next_index),
          last ? pick.data_ptr<uint8_t>() : nullptr);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      if (last) break;
      kept_key = next_key;  // (alive until the next round has read them)
      kept_index = next_index;
      round_key = kept_key.data_ptr<double>();
      round_index = kept_index.data_ptr<int32_t>();
      live = nullptr;
      n = chunks * s;
    }
    return pick;
  }

  // FastGCN: s draws by global importance, as distinct ids with their
  // multiplicities; s < 0: every node of positive importance.
  Candidates fastgcn_candidates(int64_t s, int64_t l) {
    const double* cum = cum_->data_ptr<double>();
    Candidates c{s >= 0 ? s : num_nodes_};
    c.cand = at::empty({c.capacity}, index_);
    if (s >= 0) {
      TORCH_CHECK(s < kInt32Limit, kOp, ": ", s, " draws in a layer");
      at::Tensor draws = at::empty({s}, index_);
      at::Tensor sorted = at::empty({s}, index_);
      c.mult = at::empty({s}, index_);
      launch(fastgcn_draws_kernel, s, stream_, cum, num_nodes_, s, rng_seed_, l,
             draws.data_ptr<int64_t>());
      if (s > 0) {
        cub_call(index_, [&](void* temp, size_t& bytes) {
          return cub::DeviceRadixSort::SortKeys(
              temp, bytes, draws.data_ptr<int64_t>(), sorted.data_ptr<int64_t>(),
              static_cast<int>(s), 0, id_bits_, stream_);
        });
        cub_call(index_, [&](void* temp, size_t& bytes) {
          return cub::DeviceRunLengthEncode::Encode(
              temp, bytes, sorted.data_ptr<int64_t>(), c.cand.data_ptr<int64_t>(),
              c.mult.data_ptr<int64_t>(), counter(kNumCand), static_cast<int>(s),
              stream_);
        });
      }
    } else if (num_nodes_ > 0) {
      cub_call(index_, [&](void* temp, size_t& bytes) {
        return cub::DeviceSelect::If(
            temp, bytes, thrust::counting_iterator<int64_t>(0),
            c.cand.data_ptr<int64_t>(), counter(kNumCand),
            static_cast<int>(num_nodes_), PositiveImportance{cum}, stream_);
      });
    }
    return c;
  }

  // The drawn candidates that are not targets yet join node (returned at
  // capacity; their count in counters[kFresh]).
  at::Tensor append_fresh(const Candidates& c, int64_t n) {
    at::Tensor rank = at::empty({c.capacity}, index_);
    at::Tensor fresh = at::empty({c.capacity}, index_);
    inclusive_sum(FreshCandidate{c.cand.data_ptr<int64_t>(),
                                 ptr_or_null<uint8_t>(c.pick), counter(kNumCand),
                                 map()},
                  c.capacity, rank.data_ptr<int64_t>());
    launch(append_fresh_kernel, c.capacity, stream_, c.cand.data_ptr<int64_t>(),
           rank.data_ptr<int64_t>(), c.capacity, n, map(),
           fresh.data_ptr<int64_t>(), counters());
    return fresh;
  }

  Kept kept_edges(const InEdges& in, const Candidates& c, int64_t s) {
    const int64_t m = in.m;
    const bool fastgcn = cum_.has_value();
    Kept out{at::empty({m}, index_), at::empty({m}, index_),
             at::empty({m}, index_), at::empty({m}, index_.dtype(at::kDouble))};
    const KeptEdge keep{fastgcn, in.src.data_ptr<int64_t>(), map(),
                        c.cand.data_ptr<int64_t>(), counter(kNumCand)};
    const LayerWeight weight{fastgcn, ptr_or_null<double>(edge_value_), s,
                             ptr_or_null<double>(c.q), ptr_or_null<int64_t>(c.run_of),
                             ptr_or_null<double>(c.q_total),
                             fastgcn ? cum_->data_ptr<double>() : nullptr,
                             num_nodes_, ptr_or_null<int64_t>(c.mult)};
    at::Tensor rank = at::empty({m}, index_);
    inclusive_sum(keep, m, rank.data_ptr<int64_t>());
    launch(kept_edges_kernel, m, stream_, keep, weight, rank.data_ptr<int64_t>(),
           in.tgt.data_ptr<int64_t>(), in.slot.data_ptr<int64_t>(),
           ptr_or_null<int64_t>(edge_id_), m, out.row.data_ptr<int64_t>(),
           out.col.data_ptr<int64_t>(), out.edge.data_ptr<int64_t>(),
           out.weight.data_ptr<double>(), counters());
    return out;
  }

  const at::Tensor& colptr_;
  const at::Tensor& row_;
  const c10::optional<at::Tensor>& edge_id_;
  const c10::optional<at::Tensor>& edge_value_;
  const c10::optional<at::Tensor>& cum_;
  const uint64_t rng_seed_;
  const int64_t num_nodes_;
  const int id_bits_;
  const at::TensorOptions index_;
  const cudaStream_t stream_;
  at::Tensor map_, counters_, host_counters_;
};

LayerSampleResult layer_sample_cuda(
    const at::Tensor& colptr_arg, const at::Tensor& row_arg,
    const c10::optional<at::Tensor>& edge_id_arg,
    const c10::optional<at::Tensor>& edge_value_arg,
    const c10::optional<at::Tensor>& node_cumsum_arg, const at::Tensor& seed_arg,
    at::IntArrayRef num_samples, int64_t rng_seed) {
  check_inputs(colptr_arg, row_arg, edge_id_arg, edge_value_arg, node_cumsum_arg,
               seed_arg, num_samples);
  c10::cuda::CUDAGuard guard(colptr_arg.device());
  // The kernels read flat arrays.
  const auto contiguous = [](const c10::optional<at::Tensor>& t) {
    return t.has_value() ? c10::optional<at::Tensor>(t->contiguous()) : c10::nullopt;
  };
  const at::Tensor colptr = colptr_arg.contiguous(), row = row_arg.contiguous(),
                   seed = seed_arg.contiguous();
  const auto edge_id = contiguous(edge_id_arg);
  const auto edge_value = contiguous(edge_value_arg);
  const auto node_cumsum = contiguous(node_cumsum_arg);
  return AT_DISPATCH_INDEX_TYPES(row.scalar_type(), "layer_sample_cuda", [&] {
    return FusedLayerSampler<index_t>(colptr, row, edge_id, edge_value,
                                      node_cumsum, rng_seed)
        .run(seed, num_samples);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("layer_sample", &layer_sample_cuda);
}

}  // namespace layer
}  // namespace fusesample
