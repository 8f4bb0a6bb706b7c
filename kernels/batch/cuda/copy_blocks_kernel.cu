// CUDA kernel of fusesample::copy_blocks (contract: ../copy_blocks.cpp; the
// CPU kernel is the reference). The pairs' addresses and cumulative sizes
// (in moves of `Unit` bytes) travel by value in the launch; a thread per
// move finds its pair by a search over the cumulative sizes in shared
// memory.
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <vector>

#include "../../common/grid.h"
#include "../copy_blocks_common.h"

namespace fusesample {
namespace {

constexpr int kThreads = 256;
constexpr int kCopyBlocks = 48;  // pairs per launch (~1.2 KB of arguments)

struct CopyList {
  const void* src[kCopyBlocks];
  void* dst[kCopyBlocks];
  int64_t end[kCopyBlocks];  // cumulative moves: pair b is [end[b-1], end[b])
  int n;
};

template <typename Unit>
__global__ void __launch_bounds__(kThreads) copy_blocks_kernel(const CopyList list) {
  __shared__ CopyList l;
  if (threadIdx.x == 0) l = list;
  __syncthreads();
  const int64_t total = l.end[l.n - 1];
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; u < total;
       u += static_cast<int64_t>(gridDim.x) * kThreads) {
    int lo = 0, hi = l.n - 1;  // the first pair whose end is > u
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (l.end[mid] > u) hi = mid; else lo = mid + 1;
    }
    const int64_t off = u - (lo > 0 ? l.end[lo - 1] : 0);
    static_cast<Unit*>(l.dst[lo])[off] = static_cast<const Unit*>(l.src[lo])[off];
  }
}

// The widest move (16, 8, 4, 2 or 1 bytes) that divides every address and
// size of pairs [a, b).
int unit_bytes(at::TensorList dst, at::TensorList src, size_t a, size_t b) {
  uintptr_t bits = 16;
  for (size_t i = a; i < b; ++i)
    bits |= reinterpret_cast<uintptr_t>(dst[i].data_ptr()) |
            reinterpret_cast<uintptr_t>(src[i].data_ptr()) |
            static_cast<uintptr_t>(dst[i].nbytes());
  return static_cast<int>(bits & (~bits + 1));  // the lowest set bit, <= 16
}

template <typename Unit>
void launch(at::TensorList dst, at::TensorList src, const std::vector<size_t>& pairs,
            cudaStream_t stream) {
  CopyList l;
  l.n = static_cast<int>(pairs.size());
  int64_t total = 0;
  for (int b = 0; b < l.n; ++b) {
    const size_t i = pairs[b];
    l.src[b] = src[i].data_ptr();
    l.dst[b] = dst[i].data_ptr();
    total += static_cast<int64_t>(dst[i].nbytes() / sizeof(Unit));
    l.end[b] = total;
  }
  copy_blocks_kernel<Unit><<<grid_blocks(total, kThreads, 8), kThreads, 0, stream>>>(l);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void copy_blocks_cuda(at::TensorList dst, at::TensorList src) {
  check_copy_blocks("fusesample::copy_blocks", dst, src);
  if (dst.empty()) return;
  c10::cuda::CUDAGuard guard(dst[0].device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  for (size_t a = 0; a < dst.size(); a += kCopyBlocks) {
    const size_t b = std::min(dst.size(), a + kCopyBlocks);
    std::vector<size_t> pairs;  // the non-empty pairs of [a, b)
    for (size_t i = a; i < b; ++i)
      if (dst[i].nbytes() > 0) pairs.push_back(i);
    if (pairs.empty()) continue;
    switch (unit_bytes(dst, src, a, b)) {
      case 16: launch<uint4>(dst, src, pairs, stream); break;
      case 8: launch<uint2>(dst, src, pairs, stream); break;
      case 4: launch<uint32_t>(dst, src, pairs, stream); break;
      case 2: launch<uint16_t>(dst, src, pairs, stream); break;
      default: launch<uint8_t>(dst, src, pairs, stream); break;
    }
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("copy_blocks", &copy_blocks_cuda);
}

}  // namespace fusesample
