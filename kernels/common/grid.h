// Grid size of a launch over `items` work items, `per_block` to a block,
// capped at `blocks_per_sm` blocks per multiprocessor of the current device
// (a grid-stride loop covers the rest): enough blocks to fill the GPU, no
// more than it keeps resident.
#pragma once

#include <ATen/cuda/CUDAContext.h>

#include <algorithm>
#include <cstdint>

namespace fusesample {

inline int64_t grid_blocks(int64_t items, int64_t per_block, int64_t blocks_per_sm) {
  const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  return std::max<int64_t>(
      1, std::min<int64_t>((items + per_block - 1) / per_block, sms * blocks_per_sm));
}

}  // namespace fusesample
