// CUDA kernels of fusesample::segment_aggregate and segment_max_backward
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
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>

#include "../../common/error_word.cuh"
#include "../../common/grid.h"
#include "../segment_common.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::segment_aggregate";
constexpr const char* kOpMaxBackward = "fusesample::segment_max_backward";
constexpr int kThreads = 256;
constexpr int kVecs = 2;  // feature vectors per lane per tile
constexpr int kPass = 4;  // slots gathered per pass

template <typename scalar_t, int V>
struct alignas(sizeof(scalar_t) * V) Vec {
  scalar_t v[V];
};

template <typename scalar_t, int V, typename acc_t>
__device__ __forceinline__ void load(const scalar_t* p, acc_t (&out)[V]) {
  const Vec<scalar_t, V> v = *reinterpret_cast<const Vec<scalar_t, V>*>(p);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = static_cast<acc_t>(v.v[i]);
}

// Row r's slots, clamped into [0, E] and in order; a pointer that needed the
// clamp (or a first/last entry other than 0/E) is reported.
__device__ __forceinline__ void extent(const int64_t* __restrict__ ptr, int64_t r, int64_t R,
                                       int64_t E, bool reporter,
                                       unsigned long long* error, int64_t& e0, int64_t& e1) {
  const int64_t p0 = ptr[r], p1 = ptr[r + 1];
  e0 = p0 < 0 ? 0 : (p0 > E ? E : p0);
  e1 = p1 < e0 ? e0 : (p1 > E ? E : p1);
  if (reporter && (e0 != p0 || e1 != p1 || (r == 0 && p0 != 0) || (r == R - 1 && p1 != E)))
    report(error, kBadPointer, r);
}

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

bool aligned(const at::Tensor& t, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % bytes == 0;
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
      using Sum = std::integral_constant<SegmentReduce, SegmentReduce::kSum>;
      using Mean = std::integral_constant<SegmentReduce, SegmentReduce::kMean>;
      using Max = std::integral_constant<SegmentReduce, SegmentReduce::kMax>;
      auto by_reduce = [&](auto v_tag) {
        if (reduce == SegmentReduce::kMax)
          go(v_tag, Max{}, std::false_type{});
        else if (value_c.defined() && reduce == SegmentReduce::kMean)
          go(v_tag, Mean{}, std::true_type{});
        else if (value_c.defined())
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
    });
  });
  return std::make_tuple(out, arg);
}

// A group of lanes per source j, lanes across features; slot order within j.
template <typename scalar_t, typename index_t>
__global__ void __launch_bounds__(kThreads)
segment_max_backward_kernel(const int64_t* __restrict__ ptr_t, const index_t* __restrict__ dst_t,
                            const int64_t* __restrict__ slot_t, const int64_t* __restrict__ arg,
                            const scalar_t* __restrict__ grad, scalar_t* __restrict__ grad_x,
                            int64_t J, int64_t E, int64_t R, int64_t F, int group,
                            unsigned long long* __restrict__ error) {
  using acc_t = at::opmath_type<scalar_t>;
  const int sub = threadIdx.x % group;
  const int64_t groups = static_cast<int64_t>(gridDim.x) * (kThreads / group);
  for (int64_t j = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / group; j < J;
       j += groups) {
    int64_t e0, e1;
    extent(ptr_t, j, J, E, sub == 0, error, e0, e1);
    for (int64_t f = sub; f < F; f += group) {
      acc_t acc = 0;
      for (int64_t i = e0; i < e1; ++i) {
        const int64_t d = static_cast<int64_t>(dst_t[i]);
        if (d < 0 || d >= R) {
          if (f == sub && sub == 0) report(error, kBadTarget, d);
          continue;
        }
        if (arg[d * F + f] == slot_t[i]) acc += static_cast<acc_t>(grad[d * F + f]);
      }
      grad_x[j * F + f] = static_cast<scalar_t>(acc);
    }
  }
}

at::Tensor segment_max_backward_cuda(const at::Tensor& ptr_t, const at::Tensor& dst_t,
                                     const at::Tensor& slot_t, const at::Tensor& arg,
                                     const at::Tensor& grad, int64_t num_src) {
  check_segment_max_backward(kOpMaxBackward, ptr_t, dst_t, slot_t, arg, grad, num_src);
  c10::cuda::CUDAGuard guard(ptr_t.device());
  const int64_t F = grad.size(1), R = grad.size(0), E = dst_t.numel();
  auto grad_x = at::empty({num_src, F}, grad.options());
  if (num_src == 0 || F == 0) return grad_x;
  const auto ptr_c = ptr_t.contiguous(), dst_c = dst_t.contiguous(),
             slot_c = slot_t.contiguous(), arg_c = arg.contiguous(), grad_c = grad.contiguous();
  unsigned long long* error = error_word_ptr(ptr_t.device());
  const int group = F >= 32 ? 32 : (F >= 16 ? 16 : (F >= 8 ? 8 : 4));
  const int64_t blocks = grid_blocks(num_src, kThreads / group, 8);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad.scalar_type(),
                                  "segment_max_backward", [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(dst_t.scalar_type(), "segment_max_backward", [&] {
      segment_max_backward_kernel<scalar_t_, index_t><<<blocks, kThreads, 0, stream>>>(
          ptr_c.data_ptr<int64_t>(), dst_c.data_ptr<index_t>(), slot_c.data_ptr<int64_t>(),
          arg_c.data_ptr<int64_t>(), grad_c.data_ptr<scalar_t_>(), grad_x.data_ptr<scalar_t_>(),
          num_src, E, R, F, group, error);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
  return grad_x;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("segment_aggregate", &segment_aggregate_cuda);
  m.impl("segment_max_backward", &segment_max_backward_cuda);
}

}  // namespace fusesample
