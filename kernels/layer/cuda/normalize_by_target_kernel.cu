// CUDA kernel of fusesample::normalize_by_target: a launch a layer, the
// thread at the head of each run does the run (a layer's run is one target's
// kept in-edges: at most its in-degree, usually tens).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/grid.h"
#include "../normalize_by_target.h"

namespace fusesample {
namespace layer {
namespace {

constexpr int kThreads = 256;

template <class out_t>
__global__ void normalize_runs_kernel(const double* __restrict__ w,
                                      const int64_t* __restrict__ col,
                                      int64_t begin, int64_t end,
                                      out_t* __restrict__ out) {
  for (int64_t e = begin + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       e < end; e += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (e == begin || col[e] != col[e - 1]) normalize_run(w, col, e, end, out);
}

at::Tensor normalize_by_target_cuda(const at::Tensor& weight_arg,
                                    const at::Tensor& col_arg,
                                    const at::Tensor& num_sampled_edges,
                                    at::ScalarType dtype) {
  const std::vector<int64_t> count =
      check_normalize_inputs(weight_arg, col_arg, num_sampled_edges, dtype);
  c10::cuda::CUDAGuard guard(weight_arg.device());
  const at::Tensor weight = weight_arg.contiguous(), col = col_arg.contiguous();
  at::Tensor out = at::empty({weight.numel()}, weight.options().dtype(dtype));
  const auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype,
                                  "normalize_by_target_cuda", [&] {
    int64_t begin = 0;
    for (const int64_t edges : count) {
      const int64_t end = begin + edges;
      if (end > begin) {
        normalize_runs_kernel<scalar_t>
            <<<grid_blocks(end - begin, kThreads, 8), kThreads, 0, stream>>>(
                weight.data_ptr<double>(), col.data_ptr<int64_t>(), begin, end,
                out.data_ptr<scalar_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
      begin = end;
    }
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("normalize_by_target", &normalize_by_target_cuda);
}

}  // namespace layer
}  // namespace fusesample
