// CUDA kernel of fusesample::copy_blocks and copy_row_blocks (contract:
// ../copy_blocks.cpp; the CPU kernel is the reference). The blocks'
// addresses and cumulative sizes (in moves of `Unit` bytes) travel by value
// in the launch; a thread per move finds its block by a search over the
// cumulative sizes in shared memory.
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../../common/grid.h"
#include "../copy_blocks_common.h"

namespace fusesample {
namespace {

constexpr int kThreads = 256;
constexpr int kCopyBlocks = 48;  // blocks per launch (~1.2 KB of arguments)

struct CopyList {
  const void* src[kCopyBlocks];
  void* dst[kCopyBlocks];
  int64_t end[kCopyBlocks];  // cumulative moves: block b is [end[b-1], end[b])
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
    int lo = 0, hi = l.n - 1;  // the first block whose end is > u
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (l.end[mid] > u) hi = mid; else lo = mid + 1;
    }
    const int64_t off = u - (lo > 0 ? l.end[lo - 1] : 0);
    static_cast<Unit*>(l.dst[lo])[off] = static_cast<const Unit*>(l.src[lo])[off];
  }
}

// The widest move (16, 8, 4, 2 or 1 bytes) that divides every address and
// size of blocks [a, b).
int unit_bytes(const std::vector<ByteBlock>& blocks, size_t a, size_t b) {
  uintptr_t bits = 16;
  for (size_t i = a; i < b; ++i)
    bits |= reinterpret_cast<uintptr_t>(blocks[i].dst) |
            reinterpret_cast<uintptr_t>(blocks[i].src) |
            static_cast<uintptr_t>(blocks[i].bytes);
  return static_cast<int>(bits & (~bits + 1));  // the lowest set bit, <= 16
}

template <typename Unit>
void launch(const std::vector<ByteBlock>& blocks, size_t a, size_t b, cudaStream_t stream) {
  CopyList l;
  l.n = static_cast<int>(b - a);
  int64_t total = 0;
  for (int k = 0; k < l.n; ++k) {
    l.src[k] = blocks[a + k].src;
    l.dst[k] = blocks[a + k].dst;
    total += blocks[a + k].bytes / static_cast<int64_t>(sizeof(Unit));
    l.end[k] = total;
  }
  copy_blocks_kernel<Unit><<<grid_blocks(total, kThreads, 8), kThreads, 0, stream>>>(l);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The non-empty blocks (checked), kCopyBlocks to a launch.
void copy_all(const std::vector<ByteBlock>& blocks, const at::Tensor& any) {
  if (blocks.empty()) return;
  c10::cuda::CUDAGuard guard(any.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  for (size_t a = 0; a < blocks.size(); a += kCopyBlocks) {
    const size_t b = std::min(blocks.size(), a + kCopyBlocks);
    switch (unit_bytes(blocks, a, b)) {
      case 16: launch<uint4>(blocks, a, b, stream); break;
      case 8: launch<uint2>(blocks, a, b, stream); break;
      case 4: launch<uint32_t>(blocks, a, b, stream); break;
      case 2: launch<uint16_t>(blocks, a, b, stream); break;
      default: launch<uint8_t>(blocks, a, b, stream); break;
    }
  }
}

void copy_blocks_cuda(at::TensorList dst, at::TensorList src) {
  const auto blocks = checked_copy_blocks("fusesample::copy_blocks", dst, src);
  if (!dst.empty()) copy_all(blocks, dst[0]);
}

void copy_row_blocks_cuda(at::TensorList dst, at::TensorList src, at::IntArrayRef rows) {
  const auto blocks = checked_copy_row_blocks("fusesample::copy_row_blocks", dst, src, rows);
  if (!dst.empty()) copy_all(blocks, dst[0]);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("copy_blocks", &copy_blocks_cuda);
  m.impl("copy_row_blocks", &copy_row_blocks_cuda);
}

}  // namespace fusesample
