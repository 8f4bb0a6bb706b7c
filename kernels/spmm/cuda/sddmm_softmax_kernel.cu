// CUDA kernels of fusesample::sddmm, csr_softmax and its backward (contract:
// ../spmm.cpp). A warp per row: sddmm gives each lane a slice of the head
// dimension and reduces with shuffles; the softmax runs max / sum / write
// passes over the row's non-zeros per head, lanes striding the non-zeros.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>

#include "../../common/grid.h"
#include "../../common/warps.cuh"
#include "../spmm_common.h"

namespace fusesample {
namespace {

constexpr const char* kSddmm = "fusesample::sddmm";
constexpr const char* kSoftmax = "fusesample::csr_softmax";
constexpr const char* kSoftmaxBackward = "fusesample::csr_softmax_backward";
constexpr int kThreads = 256;

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename T>
__device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

int64_t warp_blocks(int64_t rows) { return grid_blocks(rows, kThreads / 32, 64); }

template <typename scalar_t, typename index_t>
__global__ void __launch_bounds__(kThreads)
sddmm_kernel(const int64_t* __restrict__ rowptr, const index_t* __restrict__ col,
             const scalar_t* __restrict__ a, const scalar_t* __restrict__ b,
             scalar_t* __restrict__ out, int64_t R, int64_t H, int64_t C,
             int64_t num_b) {
  using acc_t = at::opmath_type<scalar_t>;
  const int lane = threadIdx.x & 31;
  for (int64_t r = global_warp(); r < R; r += warp_count())
    for (int64_t e = rowptr[r]; e < rowptr[r + 1]; ++e) {
      const int64_t c = static_cast<int64_t>(col[e]);
      CUDA_KERNEL_ASSERT(c >= 0 && c < num_b);
      for (int64_t h = 0; h < H; ++h) {
        const scalar_t* ar = a + (r * H + h) * C;
        const scalar_t* br = b + (c * H + h) * C;
        acc_t s = 0;
        for (int64_t k = lane; k < C; k += 32)
          s += static_cast<acc_t>(ar[k]) * static_cast<acc_t>(br[k]);
        s = warp_sum(s);
        if (lane == 0) out[e * H + h] = static_cast<scalar_t>(s);
      }
    }
}

at::Tensor sddmm_cuda(const at::Tensor& rowptr, const at::Tensor& col,
                      const at::Tensor& a, const at::Tensor& b) {
  check_sddmm(kSddmm, rowptr, col, a, b);
  c10::cuda::CUDAGuard guard(rowptr.device());
  const int64_t H = a.dim() == 3 ? a.size(1) : 1, C = a.size(-1);
  const int64_t R = rowptr.numel() - 1, E = col.numel();
  auto out = a.dim() == 3 ? at::empty({E, H}, a.options()) : at::empty({E}, a.options());
  if (R == 0 || E == 0) return out;
  const auto rowptr_c = rowptr.contiguous(), col_c = col.contiguous(),
             a_c = a.contiguous(), b_c = b.contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "sddmm_cuda", [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(col.scalar_type(), "sddmm_cuda", [&] {
      sddmm_kernel<scalar_t_, index_t><<<warp_blocks(R), kThreads, 0,
                                         at::cuda::getCurrentCUDAStream()>>>(
          rowptr_c.data_ptr<int64_t>(), col_c.data_ptr<index_t>(),
          a_c.data_ptr<scalar_t_>(), b_c.data_ptr<scalar_t_>(),
          out.data_ptr<scalar_t_>(), R, H, C, b.size(0));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
  return out;
}

// backward == false: out = softmax(in). backward == true: out = y * (g - <y, g>)
// with y = in, g = grad.
template <typename scalar_t, bool kBackward>
__global__ void __launch_bounds__(kThreads)
softmax_kernel(const int64_t* __restrict__ rowptr, const scalar_t* __restrict__ in,
               const scalar_t* __restrict__ grad, scalar_t* __restrict__ out,
               int64_t R, int64_t H) {
  using acc_t = at::opmath_type<scalar_t>;
  const int lane = threadIdx.x & 31;
  for (int64_t r = global_warp(); r < R; r += warp_count()) {
    const int64_t b = rowptr[r], e = rowptr[r + 1];
    for (int64_t h = 0; h < H; ++h) {
      if (kBackward) {
        acc_t dot = 0;
        for (int64_t i = b + lane; i < e; i += 32)
          dot += static_cast<acc_t>(in[i * H + h]) * static_cast<acc_t>(grad[i * H + h]);
        dot = warp_sum(dot);
        for (int64_t i = b + lane; i < e; i += 32)
          out[i * H + h] = static_cast<scalar_t>(
              static_cast<acc_t>(in[i * H + h]) * (static_cast<acc_t>(grad[i * H + h]) - dot));
      } else {
        acc_t mx = -INFINITY;
        for (int64_t i = b + lane; i < e; i += 32)
          mx = max(mx, static_cast<acc_t>(in[i * H + h]));
        mx = warp_max(mx);
        acc_t sum = 0;
        for (int64_t i = b + lane; i < e; i += 32)
          sum += exp(static_cast<acc_t>(in[i * H + h]) - mx);
        sum = warp_sum(sum);
        for (int64_t i = b + lane; i < e; i += 32)
          out[i * H + h] = static_cast<scalar_t>(exp(static_cast<acc_t>(in[i * H + h]) - mx) / sum);
      }
    }
  }
}

template <bool kBackward>
at::Tensor softmax_launch(const char* op, const at::Tensor& rowptr,
                          const at::Tensor& in, const at::Tensor& grad) {
  const int64_t H = check_softmax_value(op, rowptr, in);
  if (kBackward)
    TORCH_CHECK(grad.sizes() == in.sizes() && grad.scalar_type() == in.scalar_type(), op,
                ": 'grad' must match 'out' (", in.sizes(), ", ", in.scalar_type(),
                "), got ", grad.sizes(), ", ", grad.scalar_type());
  c10::cuda::CUDAGuard guard(rowptr.device());
  const auto rowptr_c = rowptr.contiguous(), in_c = in.contiguous();
  const auto grad_c = kBackward ? grad.contiguous() : in_c;
  auto out = at::empty_like(in_c);
  const int64_t R = rowptr.numel() - 1;
  if (R == 0 || in.numel() == 0) return out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.scalar_type(), "csr_softmax_cuda", [&] {
    softmax_kernel<scalar_t, kBackward><<<warp_blocks(R), kThreads, 0,
                                          at::cuda::getCurrentCUDAStream()>>>(
        rowptr_c.data_ptr<int64_t>(), in_c.data_ptr<scalar_t>(),
        grad_c.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), R, H);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

at::Tensor csr_softmax_cuda(const at::Tensor& rowptr, const at::Tensor& value) {
  return softmax_launch<false>(kSoftmax, rowptr, value, value);
}

at::Tensor csr_softmax_backward_cuda(const at::Tensor& rowptr, const at::Tensor& out,
                                     const at::Tensor& grad) {
  return softmax_launch<true>(kSoftmaxBackward, rowptr, out, grad);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("sddmm", &sddmm_cuda);
  m.impl("csr_softmax", &csr_softmax_cuda);
  m.impl("csr_softmax_backward", &csr_softmax_backward_cuda);
}

}  // namespace fusesample
