// CUDA kernel of fusesample::keyed_draws (contract: ../keyed_draws.cpp).
// Two launches on the current stream around one host read:
//   count  a thread per request: its drawable range under the rule
//          (segment_rule.h; seed_time is per request, so the request is its
//          own root), its draw count (sample_count.h), and the checks the
//          CPU kernel makes as it reads: a target outside [0, n_local) (its
//          colptr is never read) or a temporal segment not sorted by time
//          is recorded, the first such request kept, in a 2-entry buffer;
//   scan   an inclusive cumsum of the counts; ONE host read brings back the
//          total and the error buffer together, and an error raises the CPU
//          kernel's message (reading what it names: the error path only);
//   draw   a warp per request, its draws at end[i] - count[i] in draw order,
//          the positions those of the CUDA neighbour sampler
//          (sample_phases.cuh: phase_fill's and phase_floyd's device
//          functions, under the same keys), hence of the CPU kernel
//          (cpu/rule_positions.h): all positions, with replacement a draw
//          per slot, without it warp_floyd or warp_weighted_sample into
//          scratch at the request's offset, then a lane per slot.
// Output is bitwise equal to the CPU kernel's. 64-bit offsets throughout.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <limits>
#include <tuple>

#include "../../common/checks.h"
#include "../../common/floyd.cuh"
#include "../../common/grid.h"
#include "../../common/rng.h"
#include "../../common/warps.cuh"
#include "../../common/weighted_draw.h"
#include "../keyed_draws_checks.h"
#include "../sample_count.h"
#include "../segment_rule.h"
#include "weighted_topk.cuh"

namespace fusesample {
namespace {

constexpr const char* kOp = kKeyedDrawsOp;
constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

// The error buffer: the first request with a target outside [0, n_local),
// the first whose temporal segment is not sorted by time (kNone: none).
enum ErrorSlot : int { kErrTarget = 0, kErrUnsorted = 1, kErrorSlots = 2 };

// count[i] = request i's draws; a bad request counts 0 and is recorded.
__global__ void keyed_count_kernel(const int64_t* __restrict__ colptr, int64_t n_local,
                                   const int64_t* __restrict__ target, int64_t m, int64_t k,
                                   bool replace, SegmentRule rule,
                                   int64_t* __restrict__ count, long long* __restrict__ error) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < m;
       i += stride) {
    const int64_t v = target[i];
    if (v < 0 || v >= n_local) {  // never read its (nonexistent) in-edges
      atomicMin(&error[kErrTarget], static_cast<long long>(i));
      count[i] = 0;
      continue;
    }
    if (rule.edge_time != nullptr) {  // as rule_positions.h's check_time_sorted
      const int64_t start = colptr[v], end = colptr[v + 1];
      if (end - start >= 2 && rule.edge_time[start] > rule.edge_time[end - 1]) {
        atomicMin(&error[kErrUnsorted], static_cast<long long>(i));
        count[i] = 0;
        continue;
      }
    }
    // (a request's root is itself: seed_time holds one time per request)
    count[i] = sample_count(rule_range(colptr, v, k, rule, i).degree, k, replace);
  }
}

template <typename index_t>
struct DrawOut {
  const index_t* row;
  const int64_t* edge_id;  // nullptr: the CSC slot is the edge id
  int64_t* out_row;
  int64_t* out_edge;
};

// Slot w of the output takes in-edge `e`.
template <typename index_t>
__device__ __forceinline__ void put(const DrawOut<index_t>& o, int64_t w, int64_t e) {
  o.out_row[w] = static_cast<int64_t>(o.row[e]);
  o.out_edge[w] = o.edge_id ? o.edge_id[e] : e;
}

// A warp per request. Every value the branches and the calls of warp_floyd /
// warp_weighted_sample depend on is read alike by all lanes of the warp, so
// the whole warp takes them together, as those functions need.
template <typename index_t>
__global__ void keyed_draw_kernel(const int64_t* __restrict__ colptr,
                                  const int64_t* __restrict__ target,
                                  const int64_t* __restrict__ key, int64_t m, int64_t k,
                                  bool replace, uint64_t rng_seed,
                                  const int64_t* __restrict__ rng_seeds, int64_t a,
                                  SegmentRule rule, const int64_t* __restrict__ count,
                                  const int64_t* __restrict__ end, DrawOut<index_t> o,
                                  int64_t* picks, double* keys) {
  const int lane = threadIdx.x & (kWarp - 1);
  const int64_t warps = warp_count();
  for (int64_t i = global_warp(); i < m; i += warps) {
    const int64_t c = count[i];
    if (c == 0) continue;  // no in-edge drawable, or k = 0
    const int64_t out = end[i] - c;
    const SegmentRange range = rule_range(colptr, target[i], k, rule, i);
    const int64_t start = range.start, d = range.degree, b = key[i];
    // (target i's seed: its batch's, where one call serves several batches)
    const uint64_t seed = rng_seeds != nullptr ? static_cast<uint64_t>(rng_seeds[i]) : rng_seed;
    const double* cum = rule.weight_cumsum ? rule.weight_cumsum + start : nullptr;
    if (k < 0 || (!replace && k >= d)) {  // every drawable in-edge, in order (c = d)
      for (int64_t s = lane; s < d; s += kWarp) put(o, out + s, start + s);
    } else if (replace) {  // k draws (d > 0 here: c = k > 0)
      for (int64_t s = lane; s < k; s += kWarp) {
        const int64_t j = cum ? weighted_draw(seed, a, b, s, cum, d)
                              : keyed_draw(seed, a, b, s, d);
        put(o, out + s, start + j);
      }
    } else {  // k < d distinct in-edges (c = k): the warp draws, then resolves
      int64_t* p = picks + out;
      if (cum)
        warp_weighted_sample(seed, a, b, cum, d, k, p, keys + out);
      else
        warp_floyd(seed, a, b, d, k, p);
      for (int64_t s = lane; s < k; s += kWarp) put(o, out + s, start + p[s]);
      __syncwarp();
    }
  }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> keyed_draws_cuda(
    const at::Tensor& colptr, const at::Tensor& row, const c10::optional<at::Tensor>& edge_id,
    const at::Tensor& target, const at::Tensor& key, int64_t k, bool replace, int64_t rng_seed,
    int64_t hop, const c10::optional<at::Tensor>& weight_cumsum,
    const c10::optional<at::Tensor>& edge_time, const c10::optional<at::Tensor>& seed_time,
    bool temporal_last, const c10::optional<at::Tensor>& rng_seeds) {
  check_keyed_draws(colptr, row, edge_id, target, key, k, replace, hop, weight_cumsum,
                    edge_time, seed_time, temporal_last);
  check_rng_seeds(target, rng_seeds);
  c10::cuda::CUDAGuard guard(target.device());
  const int64_t m = target.numel(), n_local = colptr.numel() - 1;
  const auto options = target.options();
  if (m == 0) {
    const auto none = at::empty({0}, options);
    return {none, none.clone(), none.clone()};
  }
  const auto colptr_c = colptr.contiguous(), row_c = row.contiguous(),
             target_c = target.contiguous(), key_c = key.contiguous();
  c10::optional<at::Tensor> eid_c, seeds_c;
  if (edge_id.has_value()) eid_c = edge_id->contiguous();
  if (rng_seeds.has_value()) seeds_c = rng_seeds->contiguous();
  const KeyedDrawsRule rule_c(weight_cumsum, edge_time, seed_time, temporal_last);
  const SegmentRule& rule = rule_c.rule;
  const int64_t* ptr = colptr_c.data_ptr<int64_t>();
  const int64_t* tgt = target_c.data_ptr<int64_t>();
  const auto stream = at::cuda::getCurrentCUDAStream();

  auto count = at::empty({m}, options);
  auto error = at::full({static_cast<int64_t>(kErrorSlots)}, kNone, options);
  keyed_count_kernel<<<grid_blocks(m, kThreads, 8), kThreads, 0, stream>>>(
      ptr, n_local, tgt, m, k, replace, rule, count.data_ptr<int64_t>(),
      reinterpret_cast<long long*>(error.data_ptr<int64_t>()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const auto end = count.cumsum(0);
  // The documented host read: the total and the error buffer, together.
  const auto host = at::cat({end.narrow(0, m - 1, 1), error}).cpu();
  const int64_t* h = host.data_ptr<int64_t>();
  const int64_t total = h[0];
  if (h[1 + kErrTarget] != kNone) {
    // The CPU kernel's message, over all targets (error path: more reads).
    check_ids_in_range_cpu(kOp, "target", target, n_local);
    TORCH_CHECK(false, kOp, ": 'target' holds ids outside [0, ", n_local, ")");
  }
  if (h[1 + kErrUnsorted] != kNone) {
    // rule_positions.h's check_time_sorted's message (error path: more reads).
    const int64_t seg = target_c[h[1 + kErrUnsorted]].item<int64_t>();
    const int64_t first = colptr_c[seg].item<int64_t>(),
                  last = colptr_c[seg + 1].item<int64_t>() - 1;
    TORCH_CHECK(false, kOp, ": 'edge_time' is not sorted within the in-edges of CSC segment ",
                seg, " (", (*rule_c.edge_time)[first].item<int64_t>(), " before ",
                (*rule_c.edge_time)[last].item<int64_t>(), ")");
  }
  auto out_row = at::empty({total}, options), out_edge = at::empty({total}, options);
  if (total == 0) return {count, out_row, out_edge};
  // Floyd's / the weighted sample's picks (and keys) at each request's
  // offset: only sampling without replacement makes them.
  at::Tensor picks, keys;
  if (!replace && k >= 0) {
    picks = at::empty({total}, options);
    if (rule.weight_cumsum) keys = at::empty({total}, options.dtype(at::kDouble));
  }
  const int64_t a = draw_key(hop, 1, 0);
  AT_DISPATCH_INDEX_TYPES(row.scalar_type(), "keyed_draws_cuda", [&] {
    const DrawOut<index_t> o{row_c.data_ptr<index_t>(),
                             eid_c ? eid_c->data_ptr<int64_t>() : nullptr,
                             out_row.data_ptr<int64_t>(), out_edge.data_ptr<int64_t>()};
    keyed_draw_kernel<index_t><<<grid_blocks(m * kWarp, kThreads, 8), kThreads, 0, stream>>>(
        ptr, tgt, key_c.data_ptr<int64_t>(), m, k, replace, static_cast<uint64_t>(rng_seed),
        seeds_c ? seeds_c->data_ptr<int64_t>() : nullptr, a, rule, count.data_ptr<int64_t>(),
        end.data_ptr<int64_t>(), o,
        picks.defined() ? picks.data_ptr<int64_t>() : nullptr,
        keys.defined() ? keys.data_ptr<double>() : nullptr);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {count, out_row, out_edge};
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("keyed_draws", &keyed_draws_cuda);
}

}  // namespace fusesample
