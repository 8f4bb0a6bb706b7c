// CUDA kernel of fusesample::segment_slot_dot (contract: ../segment_slot_dot.cpp;
// the CPU kernel is the reference).
//
// A group of G lanes owns a row (a target) and walks its slots in order,
// kPass slots' source rows loaded before any sum so that several gathers are
// in flight. For each head the lanes split its C columns (16-byte vectors
// when C, F and the pointers allow) and the group sums its partial dots with
// shuffles in a fixed tree: every output is one fixed-order sum
// (deterministic). G is the fewest lanes (a power of two in [4, 32]) that
// cover a head's vectors one to a lane, so narrow heads pack rows several to
// a warp. The target's gradient row is re-read per slot from L1.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "../../common/error_word.cuh"
#include "../../common/grid.h"
#include "../segment_common.h"
#include "segment_layout.cuh"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::segment_slot_dot";
constexpr int kThreads = 256;
constexpr int kPass = 4;  // slots gathered per pass

template <typename scalar_t, typename index_t, int V>
__global__ void __launch_bounds__(kThreads)
segment_slot_dot_kernel(const int64_t* __restrict__ ptr, const index_t* __restrict__ src,
                        const scalar_t* __restrict__ grad, const scalar_t* __restrict__ x,
                        scalar_t* __restrict__ out, int64_t R, int64_t E, int64_t N, int64_t F,
                        int64_t heads, bool mean, int group,
                        unsigned long long* __restrict__ error) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t hvec = F / heads / V;  // vectors per head
  const int sub = threadIdx.x % group;
  // the group's lanes within its warp (groups never straddle a warp)
  const unsigned mask = (group == 32 ? 0xffffffffu : ((1u << group) - 1u))
                        << ((threadIdx.x & 31) / group * group);
  const int64_t groups = static_cast<int64_t>(gridDim.x) * (kThreads / group);
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / group; r < R;
       r += groups) {
    int64_t e0, e1;
    extent(ptr, r, R, E, sub == 0, error, e0, e1);
    const acc_t scale =
        mean && e1 > e0 ? acc_t(1) / static_cast<acc_t>(e1 - e0) : acc_t(1);
    const scalar_t* g = grad + r * F;
    for (int64_t e = e0; e < e1; e += kPass) {
      int64_t row[kPass];
      bool ok[kPass];
#pragma unroll
      for (int p = 0; p < kPass; ++p) {
        ok[p] = e + p < e1;
        const int64_t u = ok[p] ? static_cast<int64_t>(src[e + p]) : 0;
        if (ok[p] && (u < 0 || u >= N)) {  // a dot of 0 instead (error_word.cuh)
          if (sub == 0) report(error, kBadSource, u);
          ok[p] = false;
          if (sub == 0)
            for (int64_t h = 0; h < heads; ++h) out[(e + p) * heads + h] = scalar_t(0);
        }
        row[p] = ok[p] ? u * F : -1;
      }
      for (int64_t h = 0; h < heads; ++h) {
        acc_t dot[kPass] = {};
        for (int64_t vi = sub; vi < hvec; vi += group) {
          const int64_t col = (h * hvec + vi) * V;
          acc_t gv[V];
          load<scalar_t, V>(g + col, gv);
          acc_t xv[kPass][V];
#pragma unroll
          for (int p = 0; p < kPass; ++p)
            if (ok[p]) load<scalar_t, V>(x + row[p] + col, xv[p]);
#pragma unroll
          for (int p = 0; p < kPass; ++p)
            if (ok[p])
#pragma unroll
              for (int i = 0; i < V; ++i) dot[p] += gv[i] * xv[p][i];
        }
#pragma unroll
        for (int p = 0; p < kPass; ++p) {
          for (int o = group / 2; o > 0; o >>= 1)
            dot[p] += __shfl_xor_sync(mask, dot[p], o, group);
          if (ok[p] && sub == 0) out[(e + p) * heads + h] = static_cast<scalar_t>(dot[p] * scale);
        }
      }
    }
  }
}

// The fewest lanes (a power of two in [4, 32]) that give each of a head's
// vectors a lane.
int lanes_for_head(int64_t hvec) {
  int g = 4;
  while (g < 32 && g < hvec) g <<= 1;
  return g;
}

at::Tensor segment_slot_dot_cuda(const at::Tensor& ptr, const at::Tensor& src,
                                 const at::Tensor& grad, const at::Tensor& x, int64_t heads,
                                 c10::string_view reduce_name) {
  const SegmentReduce reduce = parse_segment_reduce(kOp, std::string(reduce_name));
  check_segment_slot_dot(kOp, ptr, src, grad, x, heads, reduce);
  c10::cuda::CUDAGuard guard(ptr.device());
  const int64_t R = ptr.numel() - 1, E = src.numel(), N = x.size(0), F = x.size(1);
  auto out = at::empty({E, heads}, x.options());
  if (R == 0 || E == 0) return out;
  if (F == 0) return out.zero_();
  const auto ptr_c = ptr.contiguous(), src_c = src.contiguous(), grad_c = grad.contiguous(),
             x_c = x.contiguous();
  unsigned long long* error = error_word_ptr(ptr.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "segment_slot_dot",
                                  [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(src.scalar_type(), "segment_slot_dot", [&] {
      constexpr int V16 = 16 / sizeof(scalar_t_);
      const bool vec = (F / heads) % V16 == 0 && aligned(x_c, 16) && aligned(grad_c, 16);
      auto go = [&](auto v_tag) {
        constexpr int V = decltype(v_tag)::value;
        const int group = lanes_for_head(F / heads / V);
        const int64_t blocks = grid_blocks(R, kThreads / group, 8);
        segment_slot_dot_kernel<scalar_t_, index_t, V><<<blocks, kThreads, 0, stream>>>(
            ptr_c.data_ptr<int64_t>(), src_c.data_ptr<index_t>(), grad_c.data_ptr<scalar_t_>(),
            x_c.data_ptr<scalar_t_>(), out.data_ptr<scalar_t_>(), R, E, N, F, heads,
            reduce == SegmentReduce::kMean, group, error);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      };
      if (vec)
        go(std::integral_constant<int, V16>{});
      else
        go(std::integral_constant<int, 1>{});
    });
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("segment_slot_dot", &segment_slot_dot_cuda);
}

}  // namespace fusesample
