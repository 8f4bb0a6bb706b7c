// CPU kernel of fusesample::copy_blocks and copy_row_blocks (contract:
// ../copy_blocks.cpp): a memcpy per block, blocks in parallel.
#include <ATen/core/Tensor.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cstring>
#include <vector>

#include "../copy_blocks_common.h"

namespace fusesample {
namespace {

void copy_all(const std::vector<ByteBlock>& blocks) {
  at::parallel_for(0, static_cast<int64_t>(blocks.size()), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      std::memcpy(blocks[i].dst, blocks[i].src, static_cast<size_t>(blocks[i].bytes));
  });
}

void copy_blocks_cpu(at::TensorList dst, at::TensorList src) {
  copy_all(checked_copy_blocks("fusesample::copy_blocks", dst, src));
}

void copy_row_blocks_cpu(at::TensorList dst, at::TensorList src, at::IntArrayRef rows) {
  copy_all(checked_copy_row_blocks("fusesample::copy_row_blocks", dst, src, rows));
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("copy_blocks", &copy_blocks_cpu);
  m.impl("copy_row_blocks", &copy_row_blocks_cpu);
}

}  // namespace fusesample
