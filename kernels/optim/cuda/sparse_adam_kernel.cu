// CUDA kernel of fusesample::sparse_adam_ (contract: ../sparse_adam.cpp).
//
// A warp per gradient row (rows are distinct: no two warps write one
// entry), its lanes over the row's entries, so each row of the gradient,
// the moments and the parameter is read and written once, coalesced. The
// arithmetic goes through the _rn intrinsics: they round each operation on
// its own whatever the compiler flags (no contraction into fused
// multiply-adds, IEEE division and square root), as torch's chain of tensor
// ops does.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/grid.h"
#include "../sparse_adam.h"

namespace fusesample {
namespace sparse_adam {
namespace {

constexpr int kWarps = 8;  // rows a block

struct DeviceOp {
  static __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
  static __device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
  static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
  static __device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
  static __device__ __forceinline__ float sqrt(float a) { return __fsqrt_rn(a); }
  static __device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
  static __device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
  static __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
  static __device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }
  static __device__ __forceinline__ double sqrt(double a) { return __dsqrt_rn(a); }
};

template <typename scalar_t>
__global__ void __launch_bounds__(kWarps * 32)
    sparse_adam_kernel(scalar_t* __restrict__ p, scalar_t* __restrict__ m,
                       scalar_t* __restrict__ v, const int64_t* __restrict__ rows,
                       const scalar_t* __restrict__ g, int64_t K, int64_t D,
                       int64_t R, Coeffs<scalar_t> c, bool maximize) {
  const int lane = threadIdx.x % 32;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(kWarps) + threadIdx.x / 32;
       k < K; k += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t row = rows[k];
    CUDA_KERNEL_ASSERT(row >= 0 && row < R);
    const int64_t base = row * D;
    for (int64_t d = lane; d < D; d += 32) {
      const scalar_t grad = g[k * D + d];
      update<DeviceOp>(p[base + d], m[base + d], v[base + d],
                       maximize ? -grad : grad, c);
    }
  }
}

void sparse_adam_cuda(const at::Tensor& param, const at::Tensor& exp_avg,
                      const at::Tensor& exp_avg_sq, const at::Tensor& rows_,
                      const at::Tensor& values_, double step_size, double beta1,
                      double beta2, double eps, bool maximize) {
  check_inputs(param, exp_avg, exp_avg_sq, rows_, values_);
  c10::cuda::CUDAGuard guard(param.device());
  const auto rows = rows_.contiguous(), values = values_.contiguous();
  const int64_t K = rows.numel(), D = row_size(param);
  if (K == 0 || D == 0) return;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int64_t blocks = grid_blocks(K, kWarps, 8);
  AT_DISPATCH_FLOATING_TYPES(param.scalar_type(), "sparse_adam_cuda", [&] {
    sparse_adam_kernel<scalar_t><<<blocks, kWarps * 32, 0, stream>>>(
        param.mutable_data_ptr<scalar_t>(), exp_avg.mutable_data_ptr<scalar_t>(),
        exp_avg_sq.mutable_data_ptr<scalar_t>(), rows.const_data_ptr<int64_t>(),
        values.const_data_ptr<scalar_t>(), K, D, param.size(0),
        Coeffs<scalar_t>(beta1, beta2, eps, step_size), maximize);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace
}  // namespace sparse_adam

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("sparse_adam_", &sparse_adam::sparse_adam_cuda);
}

}  // namespace fusesample
