// CUDA kernels of fusesample::skipgram_loss (contract: ../skipgram_loss.cpp).
//
// A warp per window: its lanes stride over the D columns, a score is a
// shuffle-reduced dot product, so a window reads its start row and each
// context row once (twice in the backward) straight from h, and nothing of
// size pairs x D is ever written. The forward stores each window's term sum
// and reduces them with at::sum (a fixed order); the backward scatters into
// the gradient with atomics: the context rows' shares as each score is
// known, then the start row's share, summed over the window in registers
// (four columns an atomic where the hardware has vector atomics).
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/Atomic.cuh>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <type_traits>

#include "../../common/grid.h"
#include "../skipgram_loss.h"

namespace fusesample {
namespace skipgram {
namespace {

constexpr int kWarps = 8;  // windows a block
constexpr unsigned kFull = 0xffffffffu;

template <typename scalar_t, typename acc_t>
__device__ __forceinline__ acc_t warp_dot(const scalar_t* __restrict__ a,
                                          const scalar_t* __restrict__ b,
                                          int64_t dim, int lane) {
  acc_t acc = 0;
  for (int64_t d = lane; d < dim; d += 32)
    acc += static_cast<acc_t>(a[d]) * static_cast<acc_t>(b[d]);
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(kFull, acc, off);
  return acc;  // every lane holds the sum
}

// Window w of `windows` [W, C]: the sum of its pairs' terms into terms[w].
template <typename scalar_t, typename acc_t>
__global__ void __launch_bounds__(kWarps * 32)
    window_terms_kernel(const scalar_t* __restrict__ h, int64_t dim,
                        const int64_t* __restrict__ windows, int64_t W, int64_t C,
                        bool positive, acc_t eps, acc_t* __restrict__ terms) {
  const int lane = threadIdx.x % 32;
  for (int64_t w = blockIdx.x * static_cast<int64_t>(kWarps) + threadIdx.x / 32;
       w < W; w += static_cast<int64_t>(gridDim.x) * kWarps) {
    const scalar_t* start = h + windows[w * C] * dim;
    acc_t sum = 0;
    for (int64_t j = 1; j < C; ++j)
      sum += pair_term<acc_t>(
          warp_dot<scalar_t, acc_t>(start, h + windows[w * C + j] * dim, dim, lane),
          positive, eps);
    if (lane == 0) terms[w] = sum;
  }
}

// Columns a lane adds with one atomic: kVec (4) floats at once where the
// accumulator is float and the row length a multiple of 4 (16-byte aligned
// rows), else one. The scatter is bound by its atomics (pairs x D of them;
// about 1G a Node2Vec step on products-like): sm_90's vector atomics issue
// a quarter as many.
constexpr int kVec = 4;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr bool kFloat4Atomics = true;  // atomicAdd(float4*, float4)
#else
constexpr bool kFloat4Atomics = false;
#endif

template <int N, typename acc_t>
__device__ __forceinline__ void atomic_add_n(acc_t* p, const acc_t (&v)[N]) {
  if constexpr (kFloat4Atomics && N == kVec && std::is_same_v<acc_t, float>) {
    atomicAdd(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) gpuAtomicAdd(p + k, v[k]);
  }
}

// The gradient of one group: coef_scale * grad[0] is d loss / d term. Lane
// `lane` owns columns [N * lane, N * lane + N) of every 32 * N.
template <typename scalar_t, typename acc_t, int N>
__global__ void __launch_bounds__(kWarps * 32)
    scatter_grad_kernel(const scalar_t* __restrict__ h, int64_t dim,
                        const int64_t* __restrict__ windows, int64_t W, int64_t C,
                        bool positive, acc_t eps, const scalar_t* __restrict__ grad,
                        acc_t coef_scale, acc_t* __restrict__ coef,
                        acc_t* __restrict__ grad_h) {
  const int lane = threadIdx.x % 32;
  const acc_t scale = coef_scale * static_cast<acc_t>(grad[0]);
  for (int64_t w = blockIdx.x * static_cast<int64_t>(kWarps) + threadIdx.x / 32;
       w < W; w += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t u = windows[w * C];
    const scalar_t* start = h + u * dim;
    acc_t* c_w = coef + w * (C - 1);
    for (int64_t j = 1; j < C; ++j) {
      const int64_t v = windows[w * C + j];
      const acc_t c = scale * pair_term_grad<acc_t>(
          warp_dot<scalar_t, acc_t>(start, h + v * dim, dim, lane), positive, eps);
      for (int64_t d = N * lane; d < dim; d += 32 * N) {
        acc_t add[N];
#pragma unroll
        for (int k = 0; k < N; ++k) add[k] = c * static_cast<acc_t>(start[d + k]);
        atomic_add_n<N>(grad_h + v * dim + d, add);
      }
      if (lane == 0) c_w[j - 1] = c;
    }
    __syncwarp();  // c_w, written by lane 0, read by every lane
    for (int64_t d = N * lane; d < dim; d += 32 * N) {
      acc_t g[N] = {};
      for (int64_t j = 1; j < C; ++j) {
        const scalar_t* ctx = h + windows[w * C + j] * dim + d;
#pragma unroll
        for (int k = 0; k < N; ++k) g[k] += c_w[j - 1] * static_cast<acc_t>(ctx[k]);
      }
      atomic_add_n<N>(grad_h + u * dim + d, g);
    }
  }
}

int64_t blocks_for(int64_t windows) {
  return grid_blocks(windows, kWarps, 8);
}

at::Tensor skipgram_loss_cuda(const at::Tensor& h_, const at::Tensor& pos_,
                              const at::Tensor& neg_, double eps, bool check_index) {
  check_inputs(h_, pos_, neg_);
  c10::cuda::CUDAGuard guard(h_.device());
  const auto h = h_.contiguous(), pos = pos_.contiguous(), neg = neg_.contiguous();
  if (check_index) {  // a host sync, as documented
    check_ids_in_range_cpu(kOp, "pos", pos, h.size(0));
    check_ids_in_range_cpu(kOp, "neg", neg, h.size(0));
  }
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  at::Tensor loss;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, h.scalar_type(),
                                  "skipgram_loss_cuda", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    at::Tensor sums[2];
    const at::Tensor* groups[2] = {&pos, &neg};
    for (int k = 0; k < 2; ++k) {
      const at::Tensor& win = *groups[k];
      sums[k] = at::empty({win.size(0)},
                          h.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
      if (win.size(0) > 0) {
        window_terms_kernel<scalar_t, acc_t><<<blocks_for(win.size(0)), kWarps * 32, 0, stream>>>(
            h.data_ptr<scalar_t>(), h.size(1), win.data_ptr<int64_t>(), win.size(0),
            win.size(1), k == 0, static_cast<acc_t>(eps), sums[k].data_ptr<acc_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
    }
    loss = (-(sums[0].sum() / num_pairs(pos)) - sums[1].sum() / num_pairs(neg))
               .to(h.scalar_type());
  });
  return loss;
}

at::Tensor skipgram_loss_backward_cuda(const at::Tensor& grad_, const at::Tensor& h_,
                                       const at::Tensor& pos_, const at::Tensor& neg_,
                                       double eps) {
  check_inputs(h_, pos_, neg_);
  TORCH_CHECK(grad_.numel() == 1, kOp, "_backward: 'grad' must have one element");
  check_same_device(kOp, "grad", grad_, "h", h_);
  c10::cuda::CUDAGuard guard(h_.device());
  const auto h = h_.contiguous(), pos = pos_.contiguous(), neg = neg_.contiguous();
  const auto grad = grad_.reshape({1}).to(h.scalar_type());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  at::Tensor grad_acc;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, h.scalar_type(),
                                  "skipgram_loss_backward_cuda", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const auto acc_opts = h.options().dtype(c10::CppTypeToScalarType<acc_t>::value);
    grad_acc = at::zeros(h.sizes(), acc_opts);
    const at::Tensor* groups[2] = {&pos, &neg};
    for (int k = 0; k < 2; ++k) {
      const at::Tensor& win = *groups[k];
      if (win.size(0) == 0 || win.size(1) < 2) continue;
      auto coef = at::empty({win.size(0), win.size(1) - 1}, acc_opts);
      const bool vec = std::is_same<acc_t, float>::value && h.size(1) % kVec == 0;
      auto kernel = vec ? scatter_grad_kernel<scalar_t, acc_t, kVec>
                        : scatter_grad_kernel<scalar_t, acc_t, 1>;
      kernel<<<blocks_for(win.size(0)), kWarps * 32, 0, stream>>>(
          h.data_ptr<scalar_t>(), h.size(1), win.data_ptr<int64_t>(), win.size(0),
          win.size(1), k == 0, static_cast<acc_t>(eps), grad.data_ptr<scalar_t>(),
          static_cast<acc_t>(-1.0 / num_pairs(win)), coef.data_ptr<acc_t>(),
          grad_acc.data_ptr<acc_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  return grad_acc.to(h.scalar_type());
}

}  // namespace
}  // namespace skipgram

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("skipgram_loss", &skipgram::skipgram_loss_cuda);
  m.impl("skipgram_loss_backward", &skipgram::skipgram_loss_backward_cuda);
}

}  // namespace fusesample
