// copy_blocks' and copy_row_blocks' argument checks, shared by their CPU and
// CUDA kernels (contract: copy_blocks.cpp), and the byte blocks both copy.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace fusesample {

// bytes from src to dst (checked: inside their tensors)
struct ByteBlock {
  void* dst;
  const void* src;
  int64_t bytes;
};

// copy_blocks(dst, src): every pair whole
std::vector<ByteBlock> checked_copy_blocks(const char* op, at::TensorList dst,
                                           at::TensorList src);

// copy_row_blocks(dst, src, blocks): (pair, dst_row, src_row, rows) quadruples
std::vector<ByteBlock> checked_copy_row_blocks(const char* op, at::TensorList dst,
                                               at::TensorList src, at::IntArrayRef blocks);

}  // namespace fusesample
