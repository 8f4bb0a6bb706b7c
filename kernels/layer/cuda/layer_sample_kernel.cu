// CUDA kernels of fusesample::layer_sample: the draws of layer_draws.h, a
// thread per candidate or draw, around the shared ATen body
// (layer_sample_driver.h), on the current stream.
//
// A candidate's importance is summed by one thread over its in-edges in
// slot order, the order the CPU kernel sums in, so both devices compute the
// same keys and draw the same nodes. Summing a hub's many in-edges serially
// is the price; a layer's candidates number in the thousands and their
// in-edges from a batch's targets in the tens, so no thread waits long.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <tuple>

#include "../../common/grid.h"
#include "../layer_draws.h"
#include "../layer_sample_driver.h"

namespace fusesample {
namespace layer {
namespace {

constexpr int kThreads = 256;

__global__ void ladies_keys_kernel(const int64_t* __restrict__ seg_ptr,
                                   const double* __restrict__ val2,
                                   const int64_t* __restrict__ cand, int64_t n,
                                   uint64_t rng_seed, int64_t l,
                                   double* __restrict__ q,
                                   double* __restrict__ key) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    ladies_key(val2, seg_ptr[i], seg_ptr[i + 1], rng_seed, l, cand[i], q + i,
               key + i);
}

// Position i's segment: how many of the n segment ends are <= i (an upper
// bound by binary search; ends are non-decreasing).
__global__ void segment_of_kernel(const int64_t* __restrict__ ends, int64_t n,
                                  int64_t m, int64_t* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < m; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (ends[mid] <= i) lo = mid + 1; else hi = mid;
    }
    out[i] = lo;
  }
}

__global__ void in_edge_slots_kernel(const int64_t* __restrict__ colptr,
                                     const int64_t* __restrict__ node,
                                     const int64_t* __restrict__ ends,
                                     const int64_t* __restrict__ tgt, int64_t m,
                                     int64_t* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < m; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = in_edge_slot(colptr, node, ends, tgt[i], i);
}

__global__ void fastgcn_draws_kernel(const double* __restrict__ cum, int64_t n,
                                     int64_t s, uint64_t rng_seed, int64_t l,
                                     int64_t* __restrict__ out) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       j < s; j += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[j] = fastgcn_draw(cum, n, rng_seed, l, j);
}

struct CudaKernels {
  static at::Tensor segment_of(const at::Tensor& ends, int64_t m) {
    const auto e = ends.contiguous();
    auto out = at::empty({m}, e.options());
    if (m > 0) {
      segment_of_kernel<<<grid_blocks(m, kThreads, 8), kThreads, 0,
                          at::cuda::getCurrentCUDAStream()>>>(
          e.data_ptr<int64_t>(), e.numel(), m, out.data_ptr<int64_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return out;
  }

  static at::Tensor in_edge_slots(const at::Tensor& colptr,
                                  const at::Tensor& node,
                                  const at::Tensor& ends,
                                  const at::Tensor& tgt) {
    const int64_t m = tgt.numel();
    auto out = at::empty({m}, tgt.options());
    if (m > 0) {
      in_edge_slots_kernel<<<grid_blocks(m, kThreads, 8), kThreads, 0,
                             at::cuda::getCurrentCUDAStream()>>>(
          colptr.data_ptr<int64_t>(), node.data_ptr<int64_t>(),
          ends.data_ptr<int64_t>(), tgt.data_ptr<int64_t>(), m,
          out.data_ptr<int64_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return out;
  }

  static std::tuple<at::Tensor, at::Tensor> ladies_keys(
      const at::Tensor& seg_ptr, const at::Tensor& val2, const at::Tensor& cand,
      int64_t rng_seed, int64_t l) {
    const int64_t n = cand.numel();
    auto q = at::empty({n}, val2.options());
    auto key = at::empty({n}, val2.options());
    if (n > 0) {
      ladies_keys_kernel<<<grid_blocks(n, kThreads, 8), kThreads, 0,
                           at::cuda::getCurrentCUDAStream()>>>(
          seg_ptr.data_ptr<int64_t>(), val2.data_ptr<double>(),
          cand.data_ptr<int64_t>(), n, static_cast<uint64_t>(rng_seed), l,
          q.data_ptr<double>(), key.data_ptr<double>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return {q, key};
  }

  static at::Tensor sorted_position(const at::Tensor& sorted,
                                    const at::Tensor& query) {
    return at::searchsorted(sorted, query);
  }

  static at::Tensor fastgcn_draws(const at::Tensor& node_cumsum, int64_t s,
                                  int64_t rng_seed, int64_t l) {
    auto out = at::empty({s}, node_cumsum.options().dtype(at::kLong));
    if (s > 0) {
      fastgcn_draws_kernel<<<grid_blocks(s, kThreads, 8), kThreads, 0,
                             at::cuda::getCurrentCUDAStream()>>>(
          node_cumsum.data_ptr<double>(), node_cumsum.numel(), s,
          static_cast<uint64_t>(rng_seed), l, out.data_ptr<int64_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return out;
  }
};

LayerSampleResult layer_sample_cuda(
    const at::Tensor& colptr, const at::Tensor& row,
    const c10::optional<at::Tensor>& edge_id,
    const c10::optional<at::Tensor>& edge_value,
    const c10::optional<at::Tensor>& node_cumsum, const at::Tensor& seed,
    at::IntArrayRef num_samples, int64_t rng_seed) {
  c10::cuda::CUDAGuard guard(colptr.device());
  return layer_sample_driver<CudaKernels>(colptr, row, edge_id, edge_value,
                                          node_cumsum, seed, num_samples,
                                          rng_seed);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("layer_sample", &layer_sample_cuda);
}

}  // namespace layer
}  // namespace fusesample
