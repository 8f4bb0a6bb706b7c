// CUDA kernels of fusesample::segment_softmax and its backward (contract:
// ../segment_softmax.cpp; the CPU kernels are the reference).
//
// A thread owns a (row, head) and walks the row's slots in order, in
// passes over their scores (max, sum, outputs; backward: the dot, then the
// outputs): every sum one thread's, in the CPU kernel's order
// (deterministic). Neighbouring threads hold a row's heads, so a slot's
// heads are read together. A sampled batch's rows have tens of slots; a
// row of many (a hub of an arbitrary edge_index) is one thread's serial
// walk: correct, and no worse than a few of the composed ops' launches.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty_like.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <tuple>

#include "../../common/error_word.cuh"
#include "../../common/grid.h"
#include "../segment_common.h"
#include "segment_layout.cuh"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::segment_softmax";
constexpr const char* kBackwardOp = "fusesample::segment_softmax_backward";
constexpr int kThreads = 256;

template <typename scalar_t>
__global__ void __launch_bounds__(kThreads)
segment_softmax_kernel(const int64_t* __restrict__ ptr, const scalar_t* __restrict__ score,
                       const scalar_t* __restrict__ self_score, scalar_t* __restrict__ alpha,
                       scalar_t* __restrict__ alpha_self, int64_t R, int64_t E, int64_t L,
                       int64_t H, unsigned long long* __restrict__ error) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t items = R * H;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < items;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t r = i / H, h = i % H;
    int64_t e0, e1;
    extent(ptr, r, R, E, h == 0, error, e0, e1);
    const bool own = r < L;
    const acc_t s_own = own ? static_cast<acc_t>(self_score[i]) : acc_t(0);
    acc_t m = own ? s_own : -INFINITY;
    for (int64_t e = e0; e < e1; ++e) m = max(m, static_cast<acc_t>(score[e * H + h]));
    const acc_t top = isinf(m) && m < 0 ? acc_t(0) : m;
    acc_t total = 0;
    for (int64_t e = e0; e < e1; ++e) total += exp(static_cast<acc_t>(score[e * H + h]) - top);
    if (own) total += exp(s_own - top);
    total += acc_t(1e-16);
    for (int64_t e = e0; e < e1; ++e)
      alpha[e * H + h] =
          static_cast<scalar_t>(exp(static_cast<acc_t>(score[e * H + h]) - top) / total);
    if (own) alpha_self[i] = static_cast<scalar_t>(exp(s_own - top) / total);
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kThreads)
segment_softmax_backward_kernel(const int64_t* __restrict__ ptr,
                                const scalar_t* __restrict__ alpha,
                                const scalar_t* __restrict__ alpha_self,
                                const scalar_t* __restrict__ grad,
                                const scalar_t* __restrict__ grad_self,
                                scalar_t* __restrict__ out, scalar_t* __restrict__ out_self,
                                int64_t R, int64_t E, int64_t L, int64_t H,
                                unsigned long long* __restrict__ error) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t items = R * H;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < items;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t r = i / H, h = i % H;
    int64_t e0, e1;
    extent(ptr, r, R, E, h == 0, error, e0, e1);
    const bool own = r < L;
    acc_t dot = 0;
    for (int64_t e = e0; e < e1; ++e)
      dot += static_cast<acc_t>(alpha[e * H + h]) * static_cast<acc_t>(grad[e * H + h]);
    if (own) dot += static_cast<acc_t>(alpha_self[i]) * static_cast<acc_t>(grad_self[i]);
    for (int64_t e = e0; e < e1; ++e)
      out[e * H + h] = static_cast<scalar_t>(static_cast<acc_t>(alpha[e * H + h]) *
                                             (static_cast<acc_t>(grad[e * H + h]) - dot));
    if (own)
      out_self[i] = static_cast<scalar_t>(static_cast<acc_t>(alpha_self[i]) *
                                          (static_cast<acc_t>(grad_self[i]) - dot));
  }
}

std::tuple<at::Tensor, at::Tensor> segment_softmax_cuda(const at::Tensor& ptr,
                                                        const at::Tensor& score,
                                                        const at::Tensor& self_score) {
  check_segment_softmax(kOp, ptr, score, self_score, "score", "self_score");
  c10::cuda::CUDAGuard guard(ptr.device());
  const auto ptr_c = ptr.contiguous(), score_c = score.contiguous(),
             self_c = self_score.contiguous();
  auto alpha = at::empty_like(score_c), alpha_self = at::empty_like(self_c);
  const int64_t R = ptr.numel() - 1, H = score.size(1);
  if (R == 0 || H == 0) return {alpha, alpha_self};
  unsigned long long* error = error_word_ptr(ptr.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, score.scalar_type(),
                                  "segment_softmax", [&] {
    segment_softmax_kernel<scalar_t><<<grid_blocks(R * H, kThreads, 8), kThreads, 0, stream>>>(
        ptr_c.data_ptr<int64_t>(), score_c.data_ptr<scalar_t>(), self_c.data_ptr<scalar_t>(),
        alpha.data_ptr<scalar_t>(), alpha_self.data_ptr<scalar_t>(), R, score.size(0),
        self_score.size(0), H, error);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {alpha, alpha_self};
}

std::tuple<at::Tensor, at::Tensor> segment_softmax_backward_cuda(
    const at::Tensor& ptr, const at::Tensor& alpha, const at::Tensor& alpha_self,
    const at::Tensor& grad, const at::Tensor& grad_self) {
  check_segment_softmax_backward(kBackwardOp, ptr, alpha, alpha_self, grad, grad_self);
  c10::cuda::CUDAGuard guard(ptr.device());
  const auto ptr_c = ptr.contiguous(), alpha_c = alpha.contiguous(),
             self_c = alpha_self.contiguous(), grad_c = grad.contiguous(),
             grad_self_c = grad_self.contiguous();
  auto out = at::empty_like(alpha_c), out_self = at::empty_like(self_c);
  const int64_t R = ptr.numel() - 1, H = alpha.size(1);
  if (R == 0 || H == 0) return {out, out_self};
  unsigned long long* error = error_word_ptr(ptr.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, alpha.scalar_type(),
                                  "segment_softmax_backward", [&] {
    segment_softmax_backward_kernel<scalar_t>
        <<<grid_blocks(R * H, kThreads, 8), kThreads, 0, stream>>>(
            ptr_c.data_ptr<int64_t>(), alpha_c.data_ptr<scalar_t>(),
            self_c.data_ptr<scalar_t>(), grad_c.data_ptr<scalar_t>(),
            grad_self_c.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
            out_self.data_ptr<scalar_t>(), R, alpha.size(0), alpha_self.size(0), H, error);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {out, out_self};
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("segment_softmax", &segment_softmax_cuda);
  m.impl("segment_softmax_backward", &segment_softmax_backward_cuda);
}

}  // namespace fusesample
