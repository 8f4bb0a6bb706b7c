// CUDA kernels of fusesample::sample_aggregate and its backward (contract:
// ../sample_aggregate.cpp; the CPU kernels are the reference).
//
// Forward: a warp per target. It draws the target's neighbours (Floyd for
// deg > k, warp-parallel membership test: a hub costs O(k)) straight into its
// row of `nbr`, then reduces their feature rows with lanes across features
// (a warp covers kTile * 32 columns per pass, loads coalesced), accumulating
// in float32 (float64 for float64). No message tensor is ever formed.
//
// Backward: the (neighbour, target) pairs are sorted by neighbour (stable, so
// a neighbour's run keeps target order), then summed run by run in chunks of
// a fixed number of pairs, a warp per chunk. A run inside one chunk is
// written straight to the gradient; a run that crosses chunks leaves partial
// sums (head/tail) that a second kernel adds in chunk order. No float
// atomics: the result is deterministic, and a hub sampled by many targets is
// split across warps instead of serialising on atomic updates of one row.
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/PhiloxUtils.cuh>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>

#include "../../common/error_word.cuh"
#include "../../common/floyd.cuh"
#include "../../common/grid.h"
#include "../../common/warps.cuh"
#include "../../common/rng.h"
#include "../../sampler/sample_count.h"
#include "../sample_aggregate_common.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::sample_aggregate";
constexpr const char* kOpBackward = "fusesample::sample_aggregate_backward";
constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr int kTile = 8;  // columns per lane per pass

int64_t warp_blocks(int64_t warps) { return grid_blocks(warps, kWarpsPerBlock, 32); }

// ------------------------------------------------------------- forward --
// The RNG key: fixed (rng_seed >= 0), or drawn from the CUDA generator. The
// generator's Philox state is unpacked in the kernel, so under CUDA graph
// capture every replay reads the generator's current offset -- fresh draws
// per replay, as torch's own random ops behave.
struct RngKey {
  uint64_t fixed;
  bool from_generator;
  at::PhiloxCudaState philox;
};

RngKey make_rng_key(int64_t rng_seed, const at::Device& device) {
  RngKey key{static_cast<uint64_t>(rng_seed), rng_seed < 0, {}};
  if (key.from_generator) {
    auto gen = at::cuda::detail::getDefaultCUDAGenerator(device.index());
    std::lock_guard<std::mutex> lock(gen.mutex());
    key.philox = at::check_generator<at::CUDAGeneratorImpl>(gen)->philox_cuda_state(1);
  }
  return key;
}

// fusesample::sample_aggregate_error(like): the error word of like's CUDA
// device (a fresh zero word if it cannot be made now).
at::Tensor sample_aggregate_error_cuda(const at::Tensor& like) {
  c10::cuda::CUDAGuard guard(like.device());
  at::Tensor word = error_word(like.device());
  return word.defined() ? word : at::zeros({2}, like.options().dtype(at::kLong));
}

__device__ __forceinline__ uint64_t resolve(const RngKey& key) {
  if (!key.from_generator) return key.fixed;
  const auto state = at::cuda::philox::unpack(key.philox);
  return random_bits(std::get<0>(state), std::get<1>(state), 0, 0);
}

template <typename scalar_t, typename index_t, bool kMax>
__global__ void __launch_bounds__(kThreads)
sample_aggregate_kernel(const int64_t* __restrict__ colptr,
                        const index_t* __restrict__ row,
                        const scalar_t* __restrict__ x,
                        const int64_t* __restrict__ target, int64_t T, int64_t F,
                        int64_t num_dst, int64_t num_src, int64_t k, bool mean,
                        bool replace, RngKey rng_key, int64_t level,
                        scalar_t* __restrict__ out, int64_t* __restrict__ nbr,
                        int64_t* __restrict__ arg,
                        unsigned long long* __restrict__ error) {
  using acc_t = at::opmath_type<scalar_t>;
  const int lane = threadIdx.x & 31;
  const int64_t K = k < 0 ? 0 : k;
  const uint64_t rng_seed = resolve(rng_key);
  for (int64_t t = global_warp(); t < T; t += warp_count()) {
    int64_t v = target[t];
    if (v < -1 || v >= num_dst) {  // padding instead (see error_word)
      if (lane == 0) report(error, kBadTarget, v);
      v = -1;
    }
    int64_t start = 0, d = 0;
    if (v >= 0) {
      start = colptr[v];
      d = colptr[v + 1] - start;
    }
    int64_t* slots = nbr + t * K;
    const int64_t count = sample_count(d, k, replace);
    if (k >= 0) {
      if (!replace && d > k) {
        warp_floyd(rng_seed, level, v, d, k, slots);  // positions in the list
        for (int64_t s = lane; s < k; s += 32)
          slots[s] = static_cast<int64_t>(row[start + slots[s]]);
      } else if (replace) {
        for (int64_t s = lane; s < k; s += 32)
          slots[s] = d > 0 ? static_cast<int64_t>(row[start + keyed_draw(rng_seed, level, v, s, d)])
                           : -1;
      } else {
        for (int64_t s = lane; s < k; s += 32)
          slots[s] = s < d ? static_cast<int64_t>(row[start + s]) : -1;
      }
      __syncwarp();
    }
    const acc_t scale = mean && count > 0 ? acc_t(1) / static_cast<acc_t>(count)
                                          : acc_t(1);
    for (int64_t f0 = 0; f0 < F; f0 += 32 * kTile) {
      acc_t acc[kTile];
      int64_t best[kTile];
#pragma unroll
      for (int j = 0; j < kTile; ++j) {
        acc[j] = acc_t(0);
        best[j] = -1;
      }
#pragma unroll 2
      for (int64_t s = 0; s < count; ++s) {
        const int64_t u = k >= 0 ? slots[s] : static_cast<int64_t>(row[start + s]);
        if (u < 0 || u >= num_src) {  // absent instead (see error_word)
          if (lane == 0) report(error, kBadSource, u);
          continue;
        }
        const scalar_t* xu = x + u * F;
#pragma unroll
        for (int j = 0; j < kTile; ++j) {
          const int64_t f = f0 + j * 32 + lane;
          if (f < F) {
            const acc_t val = static_cast<acc_t>(xu[f]);
            if (kMax) {
              if (best[j] < 0 || val > acc[j]) {
                acc[j] = val;
                best[j] = u;
              }
            } else {
              acc[j] += val;
            }
          }
        }
      }
#pragma unroll
      for (int j = 0; j < kTile; ++j) {
        const int64_t f = f0 + j * 32 + lane;
        if (f < F) {
          out[t * F + f] = static_cast<scalar_t>(count > 0 ? acc[j] * scale : acc_t(0));
          if (kMax) arg[t * F + f] = best[j];
        }
      }
    }
  }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> sample_aggregate_cuda(
    const at::Tensor& colptr, const at::Tensor& row, const at::Tensor& x,
    const at::Tensor& target, int64_t num_neighbors, c10::string_view reduce_name,
    bool replace, int64_t rng_seed, int64_t level) {
  check_sample_aggregate(kOp, colptr, row, x, target, num_neighbors);
  const Reduce reduce = parse_reduce(kOp, std::string(reduce_name));
  check_rng_seed(kOp, rng_seed);
  c10::cuda::CUDAGuard guard(colptr.device());
  const auto colptr_c = colptr.contiguous(), row_c = row.contiguous(),
             x_c = x.contiguous(), target_c = target.contiguous();
  const int64_t T = target.numel(), F = x.size(1);
  auto out = at::empty({T, F}, x.options());
  auto nbr = at::empty({T, nbr_width(num_neighbors)}, target.options());
  auto arg = reduce == Reduce::kMax ? at::empty({T, F}, target.options())
                                    : at::empty({0}, target.options());
  if (T == 0) return std::make_tuple(out, nbr, arg);
  const int64_t blocks = warp_blocks(T);
  // k = -1 draws nothing, so it leaves the generator alone.
  const RngKey key = make_rng_key(num_neighbors >= 0 ? rng_seed : 0, colptr.device());
  at::Tensor word = error_word(colptr.device());
  auto* error = word.defined() ? reinterpret_cast<unsigned long long*>(
                                     word.data_ptr<int64_t>())
                               : nullptr;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(),
                                  "sample_aggregate_cuda", [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(row.scalar_type(), "sample_aggregate_cuda", [&] {
      auto launch = [&](auto kernel) {
        kernel<<<blocks, kThreads, 0, stream>>>(
            colptr_c.data_ptr<int64_t>(), row_c.data_ptr<index_t>(),
            x_c.data_ptr<scalar_t_>(), target_c.data_ptr<int64_t>(), T, F,
            colptr.numel() - 1, x.size(0), num_neighbors,
            reduce == Reduce::kMean, replace, key, level, out.data_ptr<scalar_t_>(), nbr.data_ptr<int64_t>(),
            reduce == Reduce::kMax ? arg.data_ptr<int64_t>() : nullptr, error);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      };
      if (reduce == Reduce::kMax)
        launch(sample_aggregate_kernel<scalar_t_, index_t, true>);
      else
        launch(sample_aggregate_kernel<scalar_t_, index_t, false>);
    });
  });
  return std::make_tuple(out, nbr, arg);
}

// ------------------------------------------------------------ backward --
// A sorted pair list: key[q] (destination row, -1 = none, sorted), and the
// source row of pair q: pair_row[perm[q]] if given, else perm[q] / div.
// Each source row is scaled by scale[row] if given (1 / count for 'mean').
struct Pairs {
  const int64_t* key;
  const int64_t* perm;
  const int64_t* pair_row;
  int64_t div;
  const float* scale_f;
  const double* scale_d;
  int64_t size;   // S
  int64_t chunk;  // pairs per chunk
};

template <typename acc_t>
__device__ __forceinline__ acc_t pair_scale(const Pairs& p, int64_t r) {
  if (sizeof(acc_t) == sizeof(double))
    return p.scale_d ? static_cast<acc_t>(p.scale_d[r]) : acc_t(1);
  return p.scale_f ? static_cast<acc_t>(p.scale_f[r]) : acc_t(1);
}

__device__ __forceinline__ int64_t pair_source(const Pairs& p, int64_t q) {
  const int64_t i = p.perm[q];
  return p.pair_row ? p.pair_row[i] : i / p.div;
}

// Pass 1: a warp per chunk [a0, a1). Runs that start and end in the chunk go
// to dst; the partial sum of a run that began in an earlier chunk goes to
// head[c], that of a run that starts here and continues goes to tail[c].
template <typename scalar_t>
__global__ void __launch_bounds__(kThreads)
segment_sum_chunks(Pairs p, const scalar_t* __restrict__ src, int64_t W,
                   scalar_t* __restrict__ dst,
                   at::opmath_type<scalar_t>* __restrict__ head,
                   at::opmath_type<scalar_t>* __restrict__ tail,
                   int64_t num_chunks) {
  using acc_t = at::opmath_type<scalar_t>;
  const int lane = threadIdx.x & 31;
  for (int64_t c = global_warp(); c < num_chunks; c += warp_count()) {
    const int64_t a0 = c * p.chunk;
    const int64_t a1 = min(a0 + p.chunk, p.size);
    for (int64_t f0 = 0; f0 < W; f0 += 32 * kTile) {
      int64_t q = a0;
      while (q < a1) {
        const int64_t key = p.key[q];
        acc_t acc[kTile];
#pragma unroll
        for (int j = 0; j < kTile; ++j) acc[j] = acc_t(0);
        int64_t e = q;
        for (; e < a1 && p.key[e] == key; ++e) {
          if (key < 0) continue;
          const int64_t r = pair_source(p, e);
          const acc_t w = pair_scale<acc_t>(p, r);
          const scalar_t* s = src + r * W;
#pragma unroll
          for (int j = 0; j < kTile; ++j) {
            const int64_t f = f0 + j * 32 + lane;
            if (f < W) acc[j] += static_cast<acc_t>(s[f]) * w;
          }
        }
        if (key >= 0) {
          const bool started_here = q > 0 ? p.key[q - 1] != key : true;
          const bool continues = e == a1 && a1 < p.size && p.key[a1] == key;
          acc_t* part = !started_here ? head + c * W : (continues ? tail + c * W : nullptr);
#pragma unroll
          for (int j = 0; j < kTile; ++j) {
            const int64_t f = f0 + j * 32 + lane;
            if (f >= W) continue;
            if (part)
              part[f] = acc[j];
            else
              dst[key * W + f] = static_cast<scalar_t>(acc[j]);
          }
        }
        q = e;
      }
    }
  }
}

// Pass 2: a warp per chunk whose last run starts in it and continues: adds
// its tail and the heads of the chunks the run covers, in chunk order.
template <typename scalar_t>
__global__ void __launch_bounds__(kThreads)
segment_sum_carry(Pairs p, int64_t W, scalar_t* __restrict__ dst,
                  const at::opmath_type<scalar_t>* __restrict__ head,
                  const at::opmath_type<scalar_t>* __restrict__ tail,
                  int64_t num_chunks) {
  using acc_t = at::opmath_type<scalar_t>;
  const int lane = threadIdx.x & 31;
  for (int64_t c = global_warp(); c < num_chunks; c += warp_count()) {
    const int64_t a0 = c * p.chunk;
    const int64_t a1 = min(a0 + p.chunk, p.size);
    const int64_t key = p.key[a1 - 1];
    if (key < 0 || a1 >= p.size || p.key[a1] != key) continue;
    // The run began before this chunk: an earlier chunk owns it.
    if (a0 > 0 && p.key[a0 - 1] == key && p.key[a0] == key) continue;
    for (int64_t f0 = 0; f0 < W; f0 += 32 * kTile) {
      acc_t acc[kTile];
#pragma unroll
      for (int j = 0; j < kTile; ++j) {
        const int64_t f = f0 + j * 32 + lane;
        acc[j] = f < W ? tail[c * W + f] : acc_t(0);
      }
      for (int64_t c2 = c + 1; c2 < num_chunks; ++c2) {
#pragma unroll
        for (int j = 0; j < kTile; ++j) {
          const int64_t f = f0 + j * 32 + lane;
          if (f < W) acc[j] += head[c2 * W + f];
        }
        const int64_t end2 = (c2 + 1) * p.chunk;
        if (end2 >= p.size || p.key[end2] != key) break;
      }
#pragma unroll
      for (int j = 0; j < kTile; ++j) {
        const int64_t f = f0 + j * 32 + lane;
        if (f < W) dst[key * W + f] = static_cast<scalar_t>(acc[j]);
      }
    }
  }
}

// dst[key] = sum of the scaled src rows of each key's run (dst rows no pair
// names are left as they are: zero).
void segment_sum(const at::Tensor& keys, const at::Tensor& pair_row, int64_t div,
                 const at::Tensor& scale, const at::Tensor& src, int64_t W,
                 at::Tensor& dst) {
  const int64_t S = keys.numel();
  if (S == 0 || W == 0) return;
  auto sorted = at::sort(keys, /*stable=*/true, /*dim=*/0, /*descending=*/false);
  const at::Tensor& key = std::get<0>(sorted);
  const at::Tensor& perm = std::get<1>(sorted);
  // Enough chunks to fill the GPU, few enough that the carries stay small.
  const int64_t chunk = std::max<int64_t>(32, (S + 65535) / 65536);
  const int64_t num_chunks = (S + chunk - 1) / chunk;
  const auto acc_type = src.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  auto carry = at::empty({2, num_chunks, W}, src.options().dtype(acc_type));
  Pairs p{key.data_ptr<int64_t>(), perm.data_ptr<int64_t>(),
          pair_row.defined() ? pair_row.data_ptr<int64_t>() : nullptr, div,
          scale.defined() && acc_type == at::kFloat ? scale.data_ptr<float>() : nullptr,
          scale.defined() && acc_type == at::kDouble ? scale.data_ptr<double>() : nullptr,
          S, chunk};
  const int64_t blocks = warp_blocks(num_chunks);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(),
                                  "segment_sum", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    acc_t* head = carry.data_ptr<acc_t>();
    acc_t* tail = head + num_chunks * W;
    segment_sum_chunks<scalar_t><<<blocks, kThreads, 0, stream>>>(
        p, src.data_ptr<scalar_t>(), W, dst.data_ptr<scalar_t>(), head, tail,
        num_chunks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    segment_sum_carry<scalar_t><<<blocks, kThreads, 0, stream>>>(
        p, W, dst.data_ptr<scalar_t>(), head, tail, num_chunks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

at::Tensor sample_aggregate_backward_cuda(
    const at::Tensor& grad_out, const at::Tensor& colptr, const at::Tensor& row,
    const at::Tensor& target, const at::Tensor& nbr, const at::Tensor& arg,
    int64_t num_neighbors, c10::string_view reduce_name, int64_t num_src) {
  const Reduce reduce = parse_reduce(kOpBackward, std::string(reduce_name));
  check_sample_aggregate_backward(kOpBackward, grad_out, colptr, row, target,
                                  nbr, arg, num_neighbors, reduce, num_src);
  c10::cuda::CUDAGuard guard(colptr.device());
  const auto go = grad_out.contiguous();
  const int64_t T = target.numel(), F = go.size(1);
  auto grad = at::zeros({num_src, F}, go.options());
  if (T == 0 || F == 0) return grad;
  const auto acc_type = go.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const auto index_opts = target.options();

  if (reduce == Reduce::kMax) {
    // One pair per (target, column): the key is the flat gradient element.
    auto column = at::arange(F, index_opts);
    auto keys = at::where(arg >= 0, arg * F + column, at::full({}, -1, index_opts));
    auto flat = grad.view({num_src * F, 1});
    segment_sum(keys.reshape({-1}), at::Tensor(), 1, at::Tensor(),
                go.view({T * F, 1}), 1, flat);
    return grad;
  }
  at::Tensor keys, pair_row, count;
  int64_t div = 1;
  if (num_neighbors >= 0) {
    keys = nbr.reshape({-1});
    div = std::max<int64_t>(nbr.size(1), 1);
    if (reduce == Reduce::kMean) count = (nbr >= 0).sum(1);
  } else {
    // All in-edges of each target: the pair list is the targets' CSC slices.
    // (targets out of range were padding in the forward: no pairs, and
    // clamped here so that no index_select asserts)
    const int64_t num_dst = colptr.numel() - 1;
    auto valid = (target >= 0).logical_and_(target < num_dst);
    auto v = target.clamp(0, std::max<int64_t>(num_dst - 1, 0));
    auto colptr_c = colptr.contiguous();
    auto start = colptr_c.index_select(0, v);
    auto deg = (colptr_c.index_select(0, (v + 1).clamp_max_(num_dst)) - start) * valid;
    const int64_t S = deg.sum().item<int64_t>();  // the documented sync
    pair_row = at::repeat_interleave(at::arange(T, index_opts), deg, 0, S);
    auto first = at::cumsum(deg, 0) - deg;
    auto slot = start.index_select(0, pair_row) + at::arange(S, index_opts) -
                first.index_select(0, pair_row);
    keys = row.index_select(0, slot).to(at::kLong);
    if (reduce == Reduce::kMean) count = deg;
  }
  at::Tensor scale;
  if (reduce == Reduce::kMean)
    scale = count.clamp_min(1).to(acc_type).reciprocal();
  segment_sum(keys, pair_row, div, scale, go, F, grad);
  return grad;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("sample_aggregate", &sample_aggregate_cuda);
  m.impl("sample_aggregate_backward", &sample_aggregate_backward_cuda);
  m.impl("sample_aggregate_error", &sample_aggregate_error_cuda);
}

}  // namespace fusesample
