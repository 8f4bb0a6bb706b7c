// CUDA kernels of fusesample::spmm (contract: ../spmm.cpp).
//
// One kernel template covers 'warp' and 'subwarp': a group of G lanes owns a
// row (G = 32 for 'warp', 8 for 'subwarp': four short rows per warp). Inside
// a group, lanes split both the feature vectors (16-byte loads when F and
// the pointers allow) and the row's non-zeros, so narrow F does not idle
// lanes; float32 accumulators, combined across non-zero slots by shuffles.
// A feature tile is vlanes * kVecs vectors; wide F loops over tiles.
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
constexpr int kSubwarpLanes = 8;

template <typename scalar_t, int V>
struct alignas(sizeof(scalar_t) * V) Vec {
  scalar_t v[V];
};

// Lane layout inside a group of G lanes that owns a row: `vlanes` lanes
// across the feature vectors of a tile (kVecs vectors each) times
// G / vlanes edge slots, so a narrow row still keeps every lane loading --
// 32 of a row's non-zeros in flight at F = 16 instead of one. The slots'
// partial sums are combined with shuffles at the end of the tile.
struct Layout {
  int group, vlanes;
};

// This lane's partial sum over non-zeros e0 + slot, e0 + slot + step, ...
// of its vectors of the tile starting at vector t0.
template <typename scalar_t, typename index_t, int V, typename acc_t>
__device__ __forceinline__ void accumulate(
    const index_t* __restrict__ col, const scalar_t* __restrict__ value,
    const scalar_t* __restrict__ x, int64_t F, int64_t C, int64_t heads,
    int64_t e0, int64_t e1, int64_t step, int64_t first, int vlanes,
    int64_t nvec, acc_t (&acc)[kVecs][V]) {
#pragma unroll 2
  for (int64_t e = e0; e < e1; e += step) {
    const int64_t src = static_cast<int64_t>(col[e]) * F;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int64_t vi = first + static_cast<int64_t>(j) * vlanes;
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

// Sums the partials of the edge slots of a group (lanes vlanes apart).
// Every lane of the warp must call it.
template <int V, typename acc_t>
__device__ __forceinline__ void reduce_slots(acc_t (&acc)[kVecs][V], int vlanes,
                                             int group) {
  for (int off = vlanes; off < group; off <<= 1)
#pragma unroll
    for (int j = 0; j < kVecs; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i)
        acc[j][i] += __shfl_xor_sync(0xffffffffu, acc[j][i], off);
}

template <typename scalar_t, typename index_t, int V>
__global__ void __launch_bounds__(kThreads)
spmm_rows_kernel(const int64_t* __restrict__ rowptr, const index_t* __restrict__ col,
                 const scalar_t* __restrict__ value, const scalar_t* __restrict__ x,
                 scalar_t* __restrict__ out, int64_t R, int64_t F, int64_t heads,
                 bool mean, Layout layout, int64_t skip_above) {
  using acc_t = at::opmath_type<scalar_t>;
  const int group = layout.group, vlanes = layout.vlanes;
  const int lane = threadIdx.x & 31;
  const int sub = lane % group, vl = sub % vlanes, slot = sub / vlanes;
  const int64_t rows_per_warp = 32 / group;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  const int64_t nvec = F / V, C = F / heads, tile = static_cast<int64_t>(vlanes) * kVecs;
  // The warp-uniform loop keeps every lane in the shuffles; a group without
  // a row (past the end, or a hub row left to the block kernel) adds zeros.
  for (int64_t base = warp * rows_per_warp; base < R; base += warps * rows_per_warp) {
    const int64_t r = base + lane / group;
    int64_t e0 = 0, e1 = 0;
    bool active = r < R;
    if (active) {
      e0 = rowptr[r];
      e1 = rowptr[r + 1];
      active = !(skip_above >= 0 && e1 - e0 > skip_above);
    }
    if (!active) e1 = e0;
    const acc_t scale = mean && e1 > e0 ? acc_t(1) / static_cast<acc_t>(e1 - e0) : acc_t(1);
    for (int64_t t0 = 0; t0 < nvec; t0 += tile) {
      acc_t acc[kVecs][V] = {};
      accumulate<scalar_t, index_t, V>(col, value, x, F, C, heads, e0 + slot, e1,
                                       group / vlanes, t0 + vl, vlanes, nvec, acc);
      reduce_slots<V>(acc, vlanes, group);
      if (!active || slot != 0) continue;
#pragma unroll
      for (int j = 0; j < kVecs; ++j) {
        const int64_t vi = t0 + vl + static_cast<int64_t>(j) * vlanes;
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

// A block per hub row: its warps split the row's non-zeros (each warp laid
// out as one 32-lane group), partial sums meet in shared memory, warp 0
// writes.
template <typename scalar_t, typename index_t, int V>
__global__ void __launch_bounds__(kThreads)
spmm_hub_kernel(const int64_t* __restrict__ rowptr, const index_t* __restrict__ col,
                const scalar_t* __restrict__ value, const scalar_t* __restrict__ x,
                scalar_t* __restrict__ out, const int64_t* __restrict__ hub_rows,
                int64_t num_hubs, int64_t F, int64_t heads, bool mean, int vlanes) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr int kWarps = kThreads / 32;
  __shared__ acc_t partial[kWarps][32 * kVecs * V];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int vl = lane % vlanes, slot = lane / vlanes, slots = 32 / vlanes;
  const int64_t nvec = F / V, C = F / heads, tile = static_cast<int64_t>(vlanes) * kVecs;
  for (int64_t h = blockIdx.x; h < num_hubs; h += gridDim.x) {
    const int64_t r = hub_rows[h];
    const int64_t e0 = rowptr[r], e1 = rowptr[r + 1];
    const acc_t scale = mean && e1 > e0 ? acc_t(1) / static_cast<acc_t>(e1 - e0) : acc_t(1);
    for (int64_t t0 = 0; t0 < nvec; t0 += tile) {
      acc_t acc[kVecs][V] = {};
      accumulate<scalar_t, index_t, V>(col, value, x, F, C, heads,
                                       e0 + warp * slots + slot, e1, kWarps * slots,
                                       t0 + vl, vlanes, nvec, acc);
      reduce_slots<V>(acc, vlanes, 32);
      if (slot == 0)
#pragma unroll
        for (int j = 0; j < kVecs; ++j)
#pragma unroll
          for (int i = 0; i < V; ++i) partial[warp][(j * vlanes + vl) * V + i] = acc[j][i];
      __syncthreads();
      if (warp == 0 && slot == 0) {
#pragma unroll
        for (int j = 0; j < kVecs; ++j) {
          const int64_t vi = t0 + vl + static_cast<int64_t>(j) * vlanes;
          if (vi >= nvec) continue;
          Vec<scalar_t, V> o;
#pragma unroll
          for (int i = 0; i < V; ++i) {
            acc_t sum = 0;
            for (int w = 0; w < kWarps; ++w) sum += partial[w][(j * vlanes + vl) * V + i];
            o.v[i] = static_cast<scalar_t>(sum * scale);
          }
          *reinterpret_cast<Vec<scalar_t, V>*>(out + r * F + vi * V) = o;
        }
      }
      __syncthreads();
    }
  }
}

// Lanes across vectors: enough that kVecs vectors each cover the row, at
// most the group; the rest of the group splits the non-zeros.
int vector_lanes(int64_t nvec, int group) {
  int v = 1;
  while (v < group && static_cast<int64_t>(v) * kVecs < nvec) v <<= 1;
  return v;
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
  // 'subwarp' packs 4 rows per warp (8 lanes each) for short rows.
  const int group = variant == SpmmVariant::kSubwarp ? kSubwarpLanes : 32;
  const Layout layout{group, vector_lanes(nvec, group)};
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const scalar_t* vp = value.defined() ? value.data_ptr<scalar_t>() : nullptr;
  const int64_t skip = variant == SpmmVariant::kHub ? hub_threshold : -1;
  const int64_t warps = (R + 32 / group - 1) / (32 / group);
  if (R > 0) {
    spmm_rows_kernel<scalar_t, index_t, V><<<blocks_for(warps), kThreads, 0, stream>>>(
        rowptr.data_ptr<int64_t>(), col.data_ptr<index_t>(), vp, x.data_ptr<scalar_t>(),
        out.data_ptr<scalar_t>(), R, F, heads, mean, layout, skip);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  if (variant == SpmmVariant::kHub && hub_rows.numel() > 0) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int64_t blocks = std::min<int64_t>(hub_rows.numel(), static_cast<int64_t>(sms) * 8);
    spmm_hub_kernel<scalar_t, index_t, V><<<blocks, kThreads, 0, stream>>>(
        rowptr.data_ptr<int64_t>(), col.data_ptr<index_t>(), vp, x.data_ptr<scalar_t>(),
        out.data_ptr<scalar_t>(), hub_rows.data_ptr<int64_t>(), hub_rows.numel(), F,
        heads, mean, vector_lanes(nvec, 32));
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
