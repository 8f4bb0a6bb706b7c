// copy_blocks' argument checks, shared by its CPU and CUDA kernels
// (contract: copy_blocks.cpp).
#pragma once

#include <ATen/core/Tensor.h>

namespace fusesample {

void check_copy_blocks(const char* op, at::TensorList dst, at::TensorList src);

}  // namespace fusesample
