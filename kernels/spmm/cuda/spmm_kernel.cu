// CUDA kernels of fusesample::spmm (contract: ../spmm.cpp).
//
// One kernel template covers 'warp' and 'subwarp': a group of G lanes owns a
// row (G = 32 for 'warp'; for 'subwarp' the smallest power of two that covers
// the row's vectors, so narrow rows pack 32 / G rows per warp instead of
// idling lanes). Lanes walk the row's non-zeros together and each loads
// whole vectors of the neighbour's feature row (16 bytes when F and the
// pointers allow), accumulating in float32 registers; a feature tile is
// G * kVecs vectors wide, so wide F loops over tiles.
// 'hub' runs the same kernel on rows with <= hub_threshold non-zeros and a
// block per row of hub_rows: its warps split the row's non-zeros and combine
// their partial sums in shared memory, so one huge row does not serialise a
// single warp (AutoSAGE's CTA-per-hub split).
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>

#include "../spmm_common.h"

namespace fusesample {
namespace {

constexpr const char* kSpmm = "fusesample::spmm";
constexpr int kThreads = 256;
constexpr int kVecs = 4;  // vectors per lane per tile

template <typename scalar_t, int V>
struct alignas(sizeof(scalar_t) * V) Vec {
  scalar_t v[V];
};

// Shared by both kernels: the weighted sum of a range of non-zeros for one
// lane's vectors of a tile. `first` is the lane's first vector index.
template <typename scalar_t, typename index_t, int V, typename acc_t>
__device__ __forceinline__ void accumulate(
    const index_t* __restrict__ col, const scalar_t* __restrict__ value,
    const scalar_t* __restrict__ x, int64_t F, int64_t C, int64_t heads,
    int64_t e0, int64_t e1, int64_t estep, int64_t first, int64_t vstep,
    int64_t nvec, acc_t (&acc)[kVecs][V]) {
  for (int64_t e = e0; e < e1; e += estep) {
    const int64_t src = static_cast<int64_t>(col[e]) * F;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int64_t vi = first + j * vstep;
      if (vi < nvec) {
        const Vec<scalar_t, V> xv =
            *reinterpret_cast<const Vec<scalar_t, V>*>(x + src + vi * V);
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const acc_t w = value ? static_cast<acc_t>(value[e * heads + (vi * V + i) / C])
                                : acc_t(1);
          acc[j][i] += w * static_cast<acc_t>(xv.v[i]);
        }
      }
    }
  }
}

template <typename scalar_t, typename index_t, int V>
__global__ void __launch_bounds__(kThreads)
spmm_rows_kernel(const int64_t* __restrict__ rowptr, const index_t* __restrict__ col,
                 const scalar_t* __restrict__ value, const scalar_t* __restrict__ x,
                 scalar_t* __restrict__ out, int64_t R, int64_t F, int64_t heads,
                 bool mean, int group, int64_t skip_above) {
  using acc_t = at::opmath_type<scalar_t>;
  const int lane = threadIdx.x & 31;
  const int sub = lane % group;
  const int64_t groups_per_warp = 32 / group;
  const int64_t gid = ((static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5) *
                          groups_per_warp + lane / group;
  const int64_t gstride = ((static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5) * groups_per_warp;
  const int64_t nvec = F / V, C = F / heads;
  for (int64_t r = gid; r < R; r += gstride) {
    const int64_t e0 = rowptr[r], e1 = rowptr[r + 1];
    if (skip_above >= 0 && e1 - e0 > skip_above) continue;  // a hub block's row
    const acc_t scale = mean && e1 > e0 ? acc_t(1) / static_cast<acc_t>(e1 - e0) : acc_t(1);
    for (int64_t t0 = 0; t0 < nvec; t0 += static_cast<int64_t>(group) * kVecs) {
      acc_t acc[kVecs][V] = {};
      accumulate<scalar_t, index_t, V>(col, value, x, F, C, heads, e0, e1, 1,
                                       t0 + sub, group, nvec, acc);
#pragma unroll
      for (int j = 0; j < kVecs; ++j) {
        const int64_t vi = t0 + sub + j * group;
        if (vi < nvec) {
          Vec<scalar_t, V> o;
#pragma unroll
          for (int i = 0; i < V; ++i) o.v[i] = static_cast<scalar_t>(acc[j][i] * scale);
          *reinterpret_cast<Vec<scalar_t, V>*>(out + r * F + vi * V) = o;
        }
      }
    }
  }
}

// A block per hub row: warp w takes non-zeros e0 + w, e0 + w + warps, ...;
// partial sums meet in shared memory, warp 0 writes.
template <typename scalar_t, typename index_t, int V>
__global__ void __launch_bounds__(kThreads)
spmm_hub_kernel(const int64_t* __restrict__ rowptr, const index_t* __restrict__ col,
                const scalar_t* __restrict__ value, const scalar_t* __restrict__ x,
                scalar_t* __restrict__ out, const int64_t* __restrict__ hub_rows,
                int64_t num_hubs, int64_t F, int64_t heads, bool mean) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr int kWarps = kThreads / 32;
  __shared__ acc_t partial[kWarps][32 * kVecs * V];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t nvec = F / V, C = F / heads;
  for (int64_t h = blockIdx.x; h < num_hubs; h += gridDim.x) {
    const int64_t r = hub_rows[h];
    const int64_t e0 = rowptr[r], e1 = rowptr[r + 1];
    const acc_t scale = mean && e1 > e0 ? acc_t(1) / static_cast<acc_t>(e1 - e0) : acc_t(1);
    for (int64_t t0 = 0; t0 < nvec; t0 += 32 * kVecs) {
      acc_t acc[kVecs][V] = {};
      accumulate<scalar_t, index_t, V>(col, value, x, F, C, heads, e0 + warp, e1,
                                       kWarps, t0 + lane, 32, nvec, acc);
#pragma unroll
      for (int j = 0; j < kVecs; ++j)
#pragma unroll
        for (int i = 0; i < V; ++i) partial[warp][(j * 32 + lane) * V + i] = acc[j][i];
      __syncthreads();
      if (warp == 0) {
#pragma unroll
        for (int j = 0; j < kVecs; ++j) {
          const int64_t vi = t0 + lane + j * 32;
          if (vi >= nvec) continue;
          Vec<scalar_t, V> o;
#pragma unroll
          for (int i = 0; i < V; ++i) {
            acc_t s = 0;
            for (int w = 0; w < kWarps; ++w) s += partial[w][(j * 32 + lane) * V + i];
            o.v[i] = static_cast<scalar_t>(s * scale);
          }
          *reinterpret_cast<Vec<scalar_t, V>*>(out + r * F + vi * V) = o;
        }
      }
      __syncthreads();
    }
  }
}

int64_t blocks_for(int64_t warps) {
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  return std::max<int64_t>(1, std::min<int64_t>((warps + kThreads / 32 - 1) / (kThreads / 32),
                                                static_cast<int64_t>(sms) * 64));
}

template <typename scalar_t, typename index_t, int V>
void launch(const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& value,
            const at::Tensor& x, at::Tensor& out, int64_t heads, bool mean,
            SpmmVariant variant, int64_t hub_threshold, const at::Tensor& hub_rows) {
  const int64_t R = rowptr.numel() - 1, F = x.size(1), nvec = F / V;
  int group = 32;
  if (variant == SpmmVariant::kSubwarp) {
    group = 1;
    while (group < 32 && static_cast<int64_t>(group) * kVecs < nvec) group <<= 1;
  }
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const scalar_t* vp = value.defined() ? value.data_ptr<scalar_t>() : nullptr;
  const int64_t skip = variant == SpmmVariant::kHub ? hub_threshold : -1;
  const int64_t groups = (R + 32 / group - 1) / (32 / group);
  if (R > 0) {
    spmm_rows_kernel<scalar_t, index_t, V><<<blocks_for(groups), kThreads, 0, stream>>>(
        rowptr.data_ptr<int64_t>(), col.data_ptr<index_t>(), vp, x.data_ptr<scalar_t>(),
        out.data_ptr<scalar_t>(), R, F, heads, mean, group, skip);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  if (variant == SpmmVariant::kHub && hub_rows.numel() > 0) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int64_t blocks = std::min<int64_t>(hub_rows.numel(), static_cast<int64_t>(sms) * 8);
    spmm_hub_kernel<scalar_t, index_t, V><<<blocks, kThreads, 0, stream>>>(
        rowptr.data_ptr<int64_t>(), col.data_ptr<index_t>(), vp, x.data_ptr<scalar_t>(),
        out.data_ptr<scalar_t>(), hub_rows.data_ptr<int64_t>(), hub_rows.numel(), F,
        heads, mean);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

bool aligned(const at::Tensor& t, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % bytes == 0;
}

at::Tensor spmm_cuda(const at::Tensor& rowptr, const at::Tensor& col,
                     const c10::optional<at::Tensor>& value, const at::Tensor& x,
                     c10::string_view reduce, c10::string_view variant_name,
                     int64_t hub_threshold, const c10::optional<at::Tensor>& hub_rows) {
  const int64_t heads = check_spmm(kSpmm, rowptr, col, value, x);
  const bool mean = parse_spmm_mean(kSpmm, std::string(reduce));
  const SpmmVariant variant = parse_spmm_variant(kSpmm, std::string(variant_name));
  at::Tensor hubs;
  if (variant == SpmmVariant::kHub) {
    TORCH_CHECK(hub_threshold >= 0 && hub_rows.has_value(), kSpmm,
                ": variant 'hub' needs hub_threshold >= 0 and hub_rows (the rows "
                "with more non-zeros than the threshold)");
    check_1d(kSpmm, "hub_rows", *hub_rows);
    check_dtype(kSpmm, "hub_rows", *hub_rows, at::kLong);
    check_same_device(kSpmm, "hub_rows", *hub_rows, "rowptr", rowptr);
    hubs = hub_rows->contiguous();
  }
  c10::cuda::CUDAGuard guard(rowptr.device());
  const auto rowptr_c = rowptr.contiguous(), col_c = col.contiguous(), x_c = x.contiguous();
  const auto value_c = value.has_value() ? value->contiguous() : at::Tensor();
  const int64_t R = rowptr.numel() - 1, F = x.size(1);
  auto out = at::empty({R, F}, x.options());
  if (R == 0 || F == 0) return out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "spmm_cuda", [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(col.scalar_type(), "spmm_cuda", [&] {
      // 16-byte vectors when every row start is 16-byte aligned.
      constexpr int V16 = 16 / sizeof(scalar_t_);
      const bool vec = F % V16 == 0 && aligned(x_c, 16) && aligned(out, 16);
      if (vec)
        launch<scalar_t_, index_t, V16>(rowptr_c, col_c, value_c, x_c, out, heads, mean,
                                        variant, hub_threshold, hubs);
      else
        launch<scalar_t_, index_t, 1>(rowptr_c, col_c, value_c, x_c, out, heads, mean,
                                      variant, hub_threshold, hubs);
    });
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) { m.impl("spmm", &spmm_cuda); }

}  // namespace fusesample
