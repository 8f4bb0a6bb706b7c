// CUDA kernel of fusesample::segment_search (contract: ../segment_search.cpp):
// a thread per query, a branchless binary search in its run, on the current
// stream. A run outside `sorted` is clamped to it (no host check: that would
// synchronise).
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/grid.h"
#include "../segment_search_checks.h"

namespace fusesample {
namespace {

constexpr int kThreads = 256;

template <typename index_t>
__global__ void segment_search_kernel(const index_t* __restrict__ sorted,
                                      int64_t size,
                                      const int64_t* __restrict__ first,
                                      const int64_t* __restrict__ length,
                                      const index_t* __restrict__ value,
                                      int64_t queries, bool upper,
                                      int64_t* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < queries; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t base = min(max(first[i], int64_t{0}), size);
    int64_t n = min(max(length[i], int64_t{0}), size - base);
    const index_t v = value[i];
    // Invariant: the answer lies in [base, base + n].
    while (n > 0) {
      const int64_t half = n >> 1;
      const index_t probe = sorted[base + half];
      const bool right = upper ? !(v < probe) : probe < v;
      base = right ? base + half + 1 : base;
      n = right ? n - half - 1 : half;
    }
    out[i] = base;
  }
}

at::Tensor segment_search_cuda(const at::Tensor& sorted, const at::Tensor& first,
                               const at::Tensor& length, const at::Tensor& value,
                               bool upper) {
  check_segment_search(sorted, first, length, value);
  c10::cuda::CUDAGuard guard(sorted.device());
  const auto sorted_c = sorted.contiguous();
  const auto first_c = first.contiguous();
  const auto length_c = length.contiguous();
  const auto value_c = value.contiguous();
  const int64_t queries = value.numel();
  auto out = at::empty({queries}, value.options().dtype(at::kLong));
  if (queries == 0) return out;
  const auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_INDEX_TYPES(sorted.scalar_type(), "segment_search_cuda", [&] {
    segment_search_kernel<index_t>
        <<<grid_blocks(queries, kThreads, 8), kThreads, 0, stream>>>(
            sorted_c.data_ptr<index_t>(), sorted_c.numel(),
            first_c.data_ptr<int64_t>(), length_c.data_ptr<int64_t>(),
            value_c.data_ptr<index_t>(), queries, upper,
            out.data_ptr<int64_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("segment_search", &segment_search_cuda);
}

}  // namespace fusesample
