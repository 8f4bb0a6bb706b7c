// CUDA kernels of fusesample::segment_aggregate and segment_aggregate_backward
// (contract: ../segment_aggregate.cpp; the CPU kernels are the reference).
//
// A group of G lanes owns a row (G = 4..32, the fewest that cover the row's
// feature vectors kVecs to a lane, so narrow rows pack several to a warp);
// lanes split the feature vectors (16-byte loads when F, the heads' width
// and the pointers allow), and walk the row's slots in order, kPass slots'
// indices and rows loaded before any sum so that many gathers are in flight.
// Sampled rows are short (the fan-out), so no row is split across groups:
// every output element is one lane's sum in slot order (deterministic).
// Layout values are checked as they are read (see the contract): nothing
// costs a host sync.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>

#include <cub/device/device_radix_sort.cuh>

#include "../../common/cub_call.h"
#include "../../common/error_word.cuh"
#include "../../common/grid.h"
#include "../segment_common.h"
#include "segment_layout.cuh"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::segment_aggregate";
constexpr const char* kOpBackward = "fusesample::segment_aggregate_backward";
constexpr int kThreads = 256;
constexpr int kVecs = 2;  // feature vectors per lane per tile
constexpr int kPass = 4;  // slots gathered per pass

template <typename scalar_t, typename index_t, int V, SegmentReduce kReduce, bool kWeighted>
__global__ void __launch_bounds__(kThreads)
segment_aggregate_kernel(const int64_t* __restrict__ ptr, const index_t* __restrict__ src,
                         const scalar_t* __restrict__ value, const scalar_t* __restrict__ x,
                         scalar_t* __restrict__ out, int64_t* __restrict__ arg, int64_t R,
                         int64_t E, int64_t N, int64_t F, int64_t heads, int group,
                         unsigned long long* __restrict__ error) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr bool kMax = kReduce == SegmentReduce::kMax;
  const int64_t nvec = F / V, C = F / heads, tile = static_cast<int64_t>(group) * kVecs;
  const int sub = threadIdx.x % group;
  const int64_t groups = static_cast<int64_t>(gridDim.x) * (kThreads / group);
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / group; r < R;
       r += groups) {
    int64_t e0, e1;
    extent(ptr, r, R, E, sub == 0, error, e0, e1);
    const acc_t scale = kReduce == SegmentReduce::kMean && e1 > e0
                            ? acc_t(1) / static_cast<acc_t>(e1 - e0)
                            : acc_t(1);
    for (int64_t t0 = sub; t0 < nvec; t0 += tile) {
      acc_t acc[kVecs][V];
      int64_t best[kMax ? kVecs : 1][kMax ? V : 1];
      int64_t head[kVecs];
#pragma unroll
      for (int j = 0; j < kVecs; ++j) {
        head[j] = kWeighted ? ((t0 + j * group) * V) / C : 0;
#pragma unroll
        for (int i = 0; i < V; ++i) {
          acc[j][i] = kMax ? -std::numeric_limits<acc_t>::infinity() : acc_t(0);
          if constexpr (kMax) best[j][i] = -1;
        }
      }
      for (int64_t e = e0; e < e1; e += kPass) {
        int64_t row[kPass];
        bool ok[kPass];
#pragma unroll
        for (int p = 0; p < kPass; ++p) {
          ok[p] = e + p < e1;
          const int64_t u = ok[p] ? static_cast<int64_t>(src[e + p]) : 0;
          if (ok[p] && (u < 0 || u >= N)) {  // absent instead (error_word.cuh)
            if (sub == 0) report(error, kBadSource, u);
            ok[p] = false;
          }
          row[p] = ok[p] ? u * F : 0;
        }
#pragma unroll
        for (int j = 0; j < kVecs; ++j) {
          const int64_t vi = t0 + static_cast<int64_t>(j) * group;
          if (vi >= nvec) continue;
          acc_t xs[kPass][V];
#pragma unroll
          for (int p = 0; p < kPass; ++p)
            if (ok[p]) load<scalar_t, V>(x + row[p] + vi * V, xs[p]);
#pragma unroll
          for (int p = 0; p < kPass; ++p) {
            if (!ok[p]) continue;
            if constexpr (kMax) {
#pragma unroll
              for (int i = 0; i < V; ++i)
                if (best[j][i] < 0 || xs[p][i] > acc[j][i]) {
                  acc[j][i] = xs[p][i];
                  best[j][i] = e + p;
                }
            } else {
              const acc_t w =
                  kWeighted ? static_cast<acc_t>(value[(e + p) * heads + head[j]]) : acc_t(1);
#pragma unroll
              for (int i = 0; i < V; ++i) acc[j][i] += kWeighted ? w * xs[p][i] : xs[p][i];
            }
          }
        }
      }
#pragma unroll
      for (int j = 0; j < kVecs; ++j) {
        const int64_t vi = t0 + static_cast<int64_t>(j) * group;
        if (vi >= nvec) continue;
        Vec<scalar_t, V> o;
#pragma unroll
        for (int i = 0; i < V; ++i) {
          if constexpr (kMax)
            o.v[i] = best[j][i] < 0 ? scalar_t(0) : static_cast<scalar_t>(acc[j][i]);
          else
            o.v[i] = static_cast<scalar_t>(acc[j][i] * scale);
        }
        *reinterpret_cast<Vec<scalar_t, V>*>(out + r * F + vi * V) = o;
        if constexpr (kMax)
#pragma unroll
          for (int i = 0; i < V; ++i) arg[r * F + vi * V + i] = best[j][i];
      }
    }
  }
}

// The fewest lanes (a power of two in [4, 32]) that cover nvec vectors with
// kVecs to a lane.
int lanes_for(int64_t nvec) {
  int g = 4;
  while (g < 32 && static_cast<int64_t>(g) * kVecs < nvec) g <<= 1;
  return g;
}

// Calls go(vector width, reduction, weighted) with compile-time tags for the
// variant a call needs (16-byte vectors when `vec`, else scalars).
template <int V16, typename Go>
void dispatch_variant_for(bool vec, SegmentReduce reduce, bool weighted, Go&& go) {
  using Sum = std::integral_constant<SegmentReduce, SegmentReduce::kSum>;
  using Mean = std::integral_constant<SegmentReduce, SegmentReduce::kMean>;
  using Max = std::integral_constant<SegmentReduce, SegmentReduce::kMax>;
  auto by_reduce = [&](auto v_tag) {
    if (reduce == SegmentReduce::kMax)
      go(v_tag, Max{}, std::false_type{});
    else if (weighted && reduce == SegmentReduce::kMean)
      go(v_tag, Mean{}, std::true_type{});
    else if (weighted)
      go(v_tag, Sum{}, std::true_type{});
    else if (reduce == SegmentReduce::kMean)
      go(v_tag, Mean{}, std::false_type{});
    else
      go(v_tag, Sum{}, std::false_type{});
  };
  if (vec)
    by_reduce(std::integral_constant<int, V16>{});
  else
    by_reduce(std::integral_constant<int, 1>{});
}

std::tuple<at::Tensor, at::Tensor> segment_aggregate_cuda(
    const at::Tensor& ptr, const at::Tensor& src, const c10::optional<at::Tensor>& value,
    const at::Tensor& x, c10::string_view reduce_name) {
  const SegmentReduce reduce = parse_segment_reduce(kOp, std::string(reduce_name));
  const int64_t heads = check_segment_aggregate(kOp, ptr, src, value, x, reduce);
  c10::cuda::CUDAGuard guard(ptr.device());
  const auto ptr_c = ptr.contiguous(), src_c = src.contiguous(), x_c = x.contiguous();
  const auto value_c = value.has_value() ? value->contiguous() : at::Tensor();
  const int64_t R = ptr.numel() - 1, E = src.numel(), N = x.size(0), F = x.size(1);
  auto out = at::empty({R, F}, x.options());
  auto arg = reduce == SegmentReduce::kMax ? at::empty({R, F}, ptr.options())
                                           : at::empty({0}, ptr.options());
  if (R == 0 || F == 0) return std::make_tuple(out, arg);
  unsigned long long* error = error_word_ptr(ptr.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "segment_aggregate",
                                  [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(src.scalar_type(), "segment_aggregate", [&] {
      constexpr int V16 = 16 / sizeof(scalar_t_);
      const bool vec = F % V16 == 0 && (F / heads) % V16 == 0 && aligned(x_c, 16) &&
                       aligned(out, 16);
      auto go = [&](auto v_tag, auto reduce_tag, auto weighted_tag) {
        constexpr int V = decltype(v_tag)::value;
        constexpr SegmentReduce kR = decltype(reduce_tag)::value;
        constexpr bool kW = decltype(weighted_tag)::value;
        const int group = lanes_for(F / V);
        const int64_t blocks = grid_blocks(R, kThreads / group, 8);
        segment_aggregate_kernel<scalar_t_, index_t, V, kR, kW><<<blocks, kThreads, 0, stream>>>(
            ptr_c.data_ptr<int64_t>(), src_c.data_ptr<index_t>(),
            kW ? value_c.data_ptr<scalar_t_>() : nullptr, x_c.data_ptr<scalar_t_>(),
            out.data_ptr<scalar_t_>(), kR == SegmentReduce::kMax ? arg.data_ptr<int64_t>() : nullptr,
            R, E, N, F, heads, group, error);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      };
      dispatch_variant_for<V16>(vec, reduce, value_c.defined(), go);
    });
  });
  return std::make_tuple(out, arg);
}

// ------------------------------------------------------------ backward --
// The slots grouped by source: keys = src (a slot with src outside [0, N)
// gets the key N and is reported), values = slot ids, radix-sorted over the
// bits of N (CUB's sort is stable: slot order within a source is kept);
// ptr_t[j] = the first sorted position with key >= j.
template <typename index_t>
__global__ void __launch_bounds__(kThreads)
slot_keys_kernel(const index_t* __restrict__ src, int64_t E, int64_t N, int32_t* __restrict__ key,
                 int64_t* __restrict__ slot, unsigned long long* __restrict__ error) {
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; s < E;
       s += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t u = static_cast<int64_t>(src[s]);
    const bool ok = u >= 0 && u < N;
    if (!ok) report(error, kBadSource, u);
    key[s] = static_cast<int32_t>(ok ? u : N);
    slot[s] = s;
  }
}

__global__ void __launch_bounds__(kThreads)
source_ptr_kernel(const int32_t* __restrict__ key, int64_t E, int64_t N,
                  int64_t* __restrict__ ptr_t) {
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; j <= N;
       j += static_cast<int64_t>(gridDim.x) * kThreads) {
    int64_t lo = 0, hi = E;  // lower bound of j in key[0, E)
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (key[mid] < j) lo = mid + 1; else hi = mid;
    }
    ptr_t[j] = lo;
  }
}

// The sorted slots are cut into chunks of `chunk` positions, a group of lanes
// per chunk (lane layout as the forward), so that a source read by thousands
// of slots (a hub: a venue, a field of study) is summed by many groups, not
// walked by one. A group sums each run of equal sources in its chunk in slot
// order (the gradient row of the slot's target, weighted: value, 1 / count
// for 'mean'; for 'max' the elements the slot won). A run holding all of
// its source's slots is written to grad_x; any other run is kept in acc_t,
// in part[0][chunk] if it starts at the chunk's start, else (it is cut by
// the chunk's end) in part[1][chunk]. segment_backward_fixup_kernel then
// sums each cut source's runs in chunk order and writes zeros for sources
// without slots: every element is one fixed-order sum (deterministic), with
// no atomics.
//
// The chunk length is a function of the order's length alone (E, or that
// of a longer src' whose order is given; so the sums' order, hence the
// result, is the same on every GPU): 32 where that gives kChunkGroups groups
// or more, halved down to 4 for fewer positions. A chunk is walked by one group in
// sequence, each pass a chain of dependent loads (slot, target, gradient
// row), so a mini-batch layer's 30k slots in chunks of 32 made ~1k groups:
// a fraction of one wave, latency-bound (30-40 us a call on an H200).
constexpr int64_t kChunkGroups = 16384;

__device__ __forceinline__ int64_t clamp_to(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

int64_t chunk_for(int64_t E) {
  int64_t chunk = 32;
  while (chunk > 4 && (E + chunk - 1) / chunk < kChunkGroups) chunk /= 2;
  return chunk;
}

template <typename scalar_t, typename index_t, int V, SegmentReduce kReduce, bool kWeighted>
__global__ void __launch_bounds__(kThreads)
segment_backward_chunk_kernel(const int64_t* __restrict__ ptr_t, const int32_t* __restrict__ key_t,
                              const int64_t* __restrict__ slot_t, const int64_t* __restrict__ ptr,
                              const index_t* __restrict__ dst, const scalar_t* __restrict__ value,
                              const scalar_t* __restrict__ grad, const int64_t* __restrict__ arg,
                              scalar_t* __restrict__ grad_x,
                              at::opmath_type<scalar_t>* __restrict__ part, int64_t N, int64_t R,
                              int64_t E, int64_t P, int64_t F, int64_t heads, int64_t chunks,
                              int64_t chunk, int group, unsigned long long* __restrict__ error) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr bool kMax = kReduce == SegmentReduce::kMax;
  const int64_t nvec = F / V, C = F / heads, tile = static_cast<int64_t>(group) * kVecs;
  const int sub = threadIdx.x % group;
  const int64_t groups = static_cast<int64_t>(gridDim.x) * (kThreads / group);
  // positions from here on hold sources >= N: bad ones, or a longer src''s
  // (clamped: a given order is read as it comes, see check_source_order)
  const int64_t valid = clamp_to(ptr_t[N], 0, P);
  for (int64_t c = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / group;
       c < chunks; c += groups) {
    const int64_t c0 = c * chunk;
    if (c0 >= valid) continue;
    const int64_t c1 = c0 + chunk < valid ? c0 + chunk : valid;
    for (int64_t t0 = sub; t0 < nvec; t0 += tile) {
      acc_t acc[kVecs][V] = {};
      int64_t j = key_t[c0], run0 = c0;
      // Writes the run of source j that starts at run0, and clears acc.
      auto flush = [&]() {
        const bool whole = j >= 0 && j < N && ptr_t[j] >= c0 && ptr_t[j + 1] <= c1;
        acc_t* to = part + ((run0 == c0 ? 0 : chunks) + c) * F;
#pragma unroll
        for (int k = 0; k < kVecs; ++k) {
          const int64_t vi = t0 + static_cast<int64_t>(k) * group;
          if (vi < nvec && whole) {
            Vec<scalar_t, V> o;
#pragma unroll
            for (int e = 0; e < V; ++e) o.v[e] = static_cast<scalar_t>(acc[k][e]);
            *reinterpret_cast<Vec<scalar_t, V>*>(grad_x + j * F + vi * V) = o;
          } else if (vi < nvec) {
            Vec<acc_t, V> o;
#pragma unroll
            for (int e = 0; e < V; ++e) o.v[e] = acc[k][e];
            *reinterpret_cast<Vec<acc_t, V>*>(to + vi * V) = o;
          }
#pragma unroll
          for (int e = 0; e < V; ++e) acc[k][e] = acc_t(0);
        }
      };
      for (int64_t i = c0; i < c1; i += kPass) {
        // kPass slots' indices and gradient rows loaded before any sum (as
        // the forward), then added in order, a run flushed where j changes.
        int64_t s[kPass], d[kPass], key[kPass];
        acc_t g[kPass][kVecs][V];
#pragma unroll
        for (int p = 0; p < kPass; ++p) {
          const bool in = i + p < c1;
          s[p] = in ? slot_t[i + p] : -1;
          key[p] = in ? static_cast<int64_t>(key_t[i + p]) : -1;
          if (in && (s[p] < 0 || key[p] < 0 || key[p] >= N)) {
            if (sub == 0) report(error, kBadSource, key[p]);  // (an order of another src)
            s[p] = -1;
          } else if (s[p] >= E) {
            s[p] = -1;  // a slot of the longer src' the order was made for
          }
          d[p] = s[p] >= 0 ? static_cast<int64_t>(dst[s[p]]) : -1;
          if (s[p] >= 0 && (d[p] < 0 || d[p] >= R)) {  // absent instead (error_word.cuh)
            if (sub == 0) report(error, kBadTarget, d[p]);
            d[p] = -1;
          }
          acc_t w = acc_t(1);
          if constexpr (kReduce == SegmentReduce::kMean) {
            if (d[p] >= 0) {
              const int64_t count = ptr[d[p] + 1] - ptr[d[p]];
              w = count > 0 ? acc_t(1) / static_cast<acc_t>(count) : acc_t(0);
            }
          }
#pragma unroll
          for (int k = 0; k < kVecs; ++k) {
            const int64_t vi = t0 + static_cast<int64_t>(k) * group;
#pragma unroll
            for (int e = 0; e < V; ++e) g[p][k][e] = acc_t(0);
            if (vi >= nvec || d[p] < 0) continue;
            load<scalar_t, V>(grad + d[p] * F + vi * V, g[p][k]);
            if constexpr (kMax) {
#pragma unroll
              for (int e = 0; e < V; ++e)
                if (arg[d[p] * F + vi * V + e] != s[p]) g[p][k][e] = acc_t(0);
            } else {
              const acc_t wv =
                  kWeighted ? w * static_cast<acc_t>(value[s[p] * heads + (vi * V) / C]) : w;
#pragma unroll
              for (int e = 0; e < V; ++e) g[p][k][e] *= wv;
            }
          }
        }
#pragma unroll
        for (int p = 0; p < kPass; ++p) {
          if (key[p] < 0) break;
          if (key[p] != j) {
            flush();
            j = key[p];
            run0 = i + p;
          }
#pragma unroll
          for (int k = 0; k < kVecs; ++k)
#pragma unroll
            for (int e = 0; e < V; ++e) acc[k][e] += g[p][k][e];
        }
      }
      flush();
    }
  }
}

// Per source j: the sum, in chunk order, of its runs kept in part (a source
// whose slots span chunks), or zeros (a source without slots); nothing for
// a source whose run was whole.
template <typename scalar_t, int V>
__global__ void __launch_bounds__(kThreads)
segment_backward_fixup_kernel(const int64_t* __restrict__ ptr_t,
                              const at::opmath_type<scalar_t>* __restrict__ part,
                              scalar_t* __restrict__ grad_x, int64_t N, int64_t P, int64_t F,
                              int64_t chunks, int64_t chunk, int group) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t nvec = F / V, tile = static_cast<int64_t>(group) * kVecs;
  const int sub = threadIdx.x % group;
  const int64_t groups = static_cast<int64_t>(gridDim.x) * (kThreads / group);
  for (int64_t j = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / group; j < N;
       j += groups) {
    // (clamped into [0, P]: a given order is read as it comes)
    const int64_t a = clamp_to(ptr_t[j], 0, P), b = clamp_to(ptr_t[j + 1], a, P);
    const int64_t ca = a / chunk, cb = b > a ? (b - 1) / chunk : ca;
    if (b > a && ca == cb) continue;  // written whole by its chunk
    for (int64_t t0 = sub; t0 < nvec; t0 += tile) {
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        const int64_t vi = t0 + static_cast<int64_t>(k) * group;
        if (vi >= nvec) continue;
        acc_t acc[V] = {};
        for (int64_t c = ca; b > a && c <= cb; ++c) {
          const acc_t* from = part + ((c * chunk >= a ? 0 : chunks) + c) * F + vi * V;
          const Vec<acc_t, V> v = *reinterpret_cast<const Vec<acc_t, V>*>(from);
#pragma unroll
          for (int e = 0; e < V; ++e) acc[e] += v.v[e];
        }
        Vec<scalar_t, V> o;
#pragma unroll
        for (int e = 0; e < V; ++e) o.v[e] = static_cast<scalar_t>(acc[e]);
        *reinterpret_cast<Vec<scalar_t, V>*>(grad_x + j * F + vi * V) = o;
      }
    }
  }
}

// The slots grouped by source (segment_source_order's contract): sorted keys
// [E] int32, the slots in that order [E] int64, ptr_t [N + 1]; on the
// current stream, no sync.
std::tuple<at::Tensor, at::Tensor, at::Tensor> source_order(const at::Tensor& src, int64_t N,
                                                            unsigned long long* error,
                                                            cudaStream_t stream) {
  const int64_t E = src.numel();
  const auto src_c = src.contiguous();
  const auto long_opts = src.options().dtype(at::kLong);
  // the sort's input and output; the outputs are tensors of their own, as
  // the op's fake (pyg_fusesample/ops/segment.py) makes them
  auto keys = at::empty({E}, long_opts.dtype(at::kInt)), key_sorted = at::empty_like(keys);
  auto slots = at::empty({E}, long_opts), slot_sorted = at::empty_like(slots);
  auto ptr_t = at::empty({N + 1}, long_opts);
  if (E > 0) {
    AT_DISPATCH_INDEX_TYPES(src.scalar_type(), "segment_source_order", [&] {
      slot_keys_kernel<index_t><<<grid_blocks(E, kThreads, 8), kThreads, 0, stream>>>(
          src_c.data_ptr<index_t>(), E, N, keys.data_ptr<int32_t>(), slots.data_ptr<int64_t>(),
          error);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
    // keys lie in [0, N]: N + 1 values
    const int end_bit = radix_key_bits(N + 1);
    cub_call(long_opts, [&](void* temp, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(
          temp, bytes, keys.data_ptr<int32_t>(), key_sorted.data_ptr<int32_t>(),
          slots.data_ptr<int64_t>(), slot_sorted.data_ptr<int64_t>(), static_cast<int>(E), 0,
          end_bit, stream);
    });
  }
  source_ptr_kernel<<<grid_blocks(N + 1, kThreads, 8), kThreads, 0, stream>>>(
      key_sorted.data_ptr<int32_t>(), E, N, ptr_t.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return std::make_tuple(key_sorted, slot_sorted, ptr_t);
}

void check_cuda_sizes(const char* op, int64_t num_src, int64_t E) {
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  TORCH_CHECK(num_src >= 0 && num_src < kMax32 && E < kMax32, op,
              ": the CUDA kernel takes fewer than 2^31 - 1 sources and slots, got ", num_src,
              " and ", E);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> segment_source_order_cuda(const at::Tensor& src,
                                                                         int64_t num_src) {
  constexpr const char* op = "fusesample::segment_source_order";
  check_segment_source_order(op, src, num_src);
  check_cuda_sizes(op, num_src, src.numel());
  c10::cuda::CUDAGuard guard(src.device());
  return source_order(src, num_src, error_word_ptr(src.device()),
                      at::cuda::getCurrentCUDAStream());
}

at::Tensor segment_aggregate_backward_cuda(const at::Tensor& ptr, const at::Tensor& src,
                                           const at::Tensor& dst,
                                           const c10::optional<at::Tensor>& value,
                                           const at::Tensor& grad, const at::Tensor& arg,
                                           int64_t num_src, c10::string_view reduce_name,
                                           const c10::optional<at::Tensor>& order_key,
                                           const c10::optional<at::Tensor>& order_slot,
                                           const c10::optional<at::Tensor>& order_ptr) {
  const SegmentBackwardArgs checked = check_segment_aggregate_backward(
      kOpBackward, ptr, src, dst, value, grad, arg, num_src, reduce_name, order_key, order_slot,
      order_ptr);
  // (named copies: lambdas below capture them)
  const SegmentReduce reduce = checked.reduce;
  const int64_t heads = checked.heads;
  check_cuda_sizes(kOpBackward, num_src, src.numel());
  c10::cuda::CUDAGuard guard(ptr.device());
  const int64_t R = grad.size(0), F = grad.size(1), E = src.numel(), N = num_src;
  auto grad_x = at::empty({N, F}, grad.options());
  if (N == 0 || F == 0) return grad_x;
  const auto ptr_c = ptr.contiguous(), dst_c = dst.contiguous(), grad_c = grad.contiguous();
  const auto value_c = value.has_value() ? value->contiguous() : at::Tensor();
  const auto arg_c = reduce == SegmentReduce::kMax ? arg.contiguous() : at::Tensor();
  unsigned long long* error = error_word_ptr(ptr.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  at::Tensor key_t, slot_t, ptr_t;  // the slots grouped by source
  if (checked.ordered) {
    key_t = order_key->contiguous();
    slot_t = order_slot->contiguous();
    ptr_t = order_ptr->contiguous();
  } else {
    std::tie(key_t, slot_t, ptr_t) = source_order(src, N, error, stream);
  }
  const int32_t* key_sorted = key_t.data_ptr<int32_t>();
  const int64_t* slot_sorted = slot_t.data_ptr<int64_t>();
  // The positions of the order (E, or more for a longer src''s order) cut
  // into chunks, two acc_t rows per chunk for the runs cut by chunk
  // boundaries (the chunk kernel's comment); 64-bit: chunks * F can pass
  // 2^31.
  const int64_t P = key_t.numel();
  const int64_t chunk = chunk_for(P), chunks = (P + chunk - 1) / chunk;
  const auto acc_type = at::toOpMathType(grad.scalar_type());
  auto part = at::empty({2 * chunks, F}, grad.options().dtype(acc_type));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad.scalar_type(),
                                  "segment_aggregate_backward", [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(dst.scalar_type(), "segment_aggregate_backward", [&] {
      constexpr int V16 = 16 / sizeof(scalar_t_);
      const bool vec = F % V16 == 0 && (F / heads) % V16 == 0 && aligned(grad_c, 16) &&
                       aligned(grad_x, 16);
      auto go = [&](auto v_tag, auto reduce_tag, auto weighted_tag) {
        constexpr int V = decltype(v_tag)::value;
        constexpr SegmentReduce kR = decltype(reduce_tag)::value;
        constexpr bool kW = decltype(weighted_tag)::value;
        using acc_t = at::opmath_type<scalar_t_>;
        const int group = lanes_for(F / V);
        if (chunks > 0) {
          segment_backward_chunk_kernel<scalar_t_, index_t, V, kR, kW>
              <<<grid_blocks(chunks, kThreads / group, 8), kThreads, 0, stream>>>(
                  ptr_t.data_ptr<int64_t>(), key_sorted, slot_sorted, ptr_c.data_ptr<int64_t>(),
                  dst_c.data_ptr<index_t>(), kW ? value_c.data_ptr<scalar_t_>() : nullptr,
                  grad_c.data_ptr<scalar_t_>(),
                  kR == SegmentReduce::kMax ? arg_c.data_ptr<int64_t>() : nullptr,
                  grad_x.data_ptr<scalar_t_>(), part.data_ptr<acc_t>(), N, R, E, P, F, heads,
                  chunks, chunk, group, error);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
        segment_backward_fixup_kernel<scalar_t_, V>
            <<<grid_blocks(N, kThreads / group, 8), kThreads, 0, stream>>>(
                ptr_t.data_ptr<int64_t>(), chunks > 0 ? part.data_ptr<acc_t>() : nullptr,
                grad_x.data_ptr<scalar_t_>(), N, P, F, chunks, chunk, group);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      };
      dispatch_variant_for<V16>(vec, reduce, value_c.defined(), go);
    });
  });
  return grad_x;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("segment_aggregate", &segment_aggregate_cuda);
  m.impl("segment_aggregate_backward", &segment_aggregate_backward_cuda);
  m.impl("segment_source_order", &segment_source_order_cuda);
}

}  // namespace fusesample
