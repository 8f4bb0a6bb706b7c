// CUDA kernel of fusesample::gather_rows (contract: ../gather_rows.cpp).
// Rows are copied as vectors of the widest width that divides the row size
// and the two base addresses (16, 8, 4, 2 or 1 bytes); a thread per vector,
// so consecutive threads read consecutive bytes of a row.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>

#include "../../common/checks.h"
#include "../../common/grid.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::gather_rows";
constexpr int kThreads = 256;

template <typename vec_t>
__global__ void gather_rows_kernel(const vec_t* __restrict__ src,
                                   const int64_t* __restrict__ index,
                                   vec_t* __restrict__ dst, int64_t rows,
                                   int64_t vecs_per_row, int64_t src_rows) {
  const int64_t total = rows * vecs_per_row;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += stride) {
    const int64_t r = i / vecs_per_row;
    const int64_t s = index[r];
    dst[i] = (s >= 0 && s < src_rows) ? src[s * vecs_per_row + (i - r * vecs_per_row)]
                                      : vec_t{};
  }
}

template <typename vec_t>
void launch(const at::Tensor& src, const at::Tensor& index, at::Tensor& out,
            int64_t row_bytes) {
  const int64_t rows = index.numel();
  const int64_t vecs = row_bytes / static_cast<int64_t>(sizeof(vec_t));
  const int64_t total = rows * vecs;
  const int64_t blocks = grid_blocks(total, kThreads, 16);
  gather_rows_kernel<vec_t><<<blocks, kThreads, 0,
                              at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const vec_t*>(src.data_ptr()), index.data_ptr<int64_t>(),
      reinterpret_cast<vec_t*>(out.data_ptr()), rows, vecs, src.size(0));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

at::Tensor gather_rows_cuda(const at::Tensor& src, const at::Tensor& index,
                            bool check_index) {
  check_gather_rows(kOp, src, index);
  c10::cuda::CUDAGuard guard(src.device());
  if (check_index && index.numel() > 0) {
    const auto minmax = at::aminmax(index);  // the documented host sync
    const int64_t lo = std::get<0>(minmax).item<int64_t>();
    const int64_t hi = std::get<1>(minmax).item<int64_t>();
    TORCH_CHECK(lo >= 0 && hi < src.size(0), kOp, ": 'index' holds ids in [",
                lo, ", ", hi, "] but must lie in [0, ", src.size(0), ")");
  }
  const auto src_c = src.contiguous();
  const auto index_c = index.contiguous();
  auto sizes = src.sizes().vec();
  sizes[0] = index.numel();
  auto out = at::empty(sizes, src.options());
  const int64_t row_bytes = src.numel() == 0 ? 0
      : static_cast<int64_t>(src_c.nbytes() / src.size(0));
  if (out.numel() == 0 || row_bytes == 0) return out;
  const auto a = reinterpret_cast<std::uintptr_t>(src_c.data_ptr()) |
                 reinterpret_cast<std::uintptr_t>(out.data_ptr()) |
                 static_cast<std::uintptr_t>(row_bytes);
  if (a % 16 == 0) launch<uint4>(src_c, index_c, out, row_bytes);
  else if (a % 8 == 0) launch<uint2>(src_c, index_c, out, row_bytes);
  else if (a % 4 == 0) launch<uint32_t>(src_c, index_c, out, row_bytes);
  else if (a % 2 == 0) launch<uint16_t>(src_c, index_c, out, row_bytes);
  else launch<uint8_t>(src_c, index_c, out, row_bytes);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("gather_rows", &gather_rows_cuda);
}

}  // namespace fusesample
