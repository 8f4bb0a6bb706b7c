// CPU kernel of fusesample::copy_blocks (contract: ../copy_blocks.cpp): a
// memcpy per pair, pairs in parallel.
#include <ATen/core/Tensor.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cstring>

#include "../copy_blocks_common.h"

namespace fusesample {
namespace {

void copy_blocks_cpu(at::TensorList dst, at::TensorList src) {
  check_copy_blocks("fusesample::copy_blocks", dst, src);
  at::parallel_for(0, static_cast<int64_t>(dst.size()), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      if (dst[i].numel() == 0) continue;
      std::memcpy(dst[i].data_ptr(), src[i].data_ptr(), dst[i].nbytes());
    }
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("copy_blocks", &copy_blocks_cpu);
}

}  // namespace fusesample
