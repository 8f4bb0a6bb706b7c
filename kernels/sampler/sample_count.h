// How many in-edges a target of in-degree `d` contributes at fan-out `k`.
// Shared by the CPU and CUDA samplers so both size their outputs alike.
#pragma once

#include <cstdint>

#include "../common/rng.h"

namespace fusesample {

FS_HOST_DEVICE int64_t sample_count(int64_t d, int64_t k, bool replace) {
  if (k < 0) return d;                  // -1: all in-edges
  if (replace) return d > 0 ? k : 0;    // k draws, none from an isolated node
  return d < k ? d : k;                 // min(deg, k) distinct in-edges
}

}  // namespace fusesample
