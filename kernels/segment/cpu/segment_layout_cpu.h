// The CPU segment kernels' reading of a layout (segment_aggregate, its
// backward, segment_slot_dot): each row's slots and each slot's source,
// checked as they are read, a bad one raising with the argument's name.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace fusesample {
namespace segment_cpu {

// Row r's slots [e0, e1), checked against the layout's length.
inline void row_extent(const char* op, const char* name, const int64_t* ptr, int64_t r,
                       int64_t E, int64_t& e0, int64_t& e1) {
  e0 = ptr[r];
  e1 = ptr[r + 1];
  TORCH_CHECK(0 <= e0 && e0 <= e1 && e1 <= E, op, ": '", name, "' gives row ", r,
              " the slots [", e0, ", ", e1, "), not within [0, ", E,
              "] in order (it must start at 0, never decrease and end at ", E, ")");
}

inline void check_ends(const char* op, const char* name, const int64_t* ptr, int64_t R,
                       int64_t E) {
  TORCH_CHECK(ptr[0] == 0 && ptr[R] == E, op, ": '", name, "' must start at 0 and end at ",
              E, " (the slots it splits), got ", ptr[0], " and ", ptr[R]);
}

template <typename index_t>
inline int64_t source_at(const char* op, const char* name, const index_t* src, int64_t e,
                         int64_t N) {
  const int64_t u = static_cast<int64_t>(src[e]);
  TORCH_CHECK(u >= 0 && u < N, op, ": '", name, "' holds id ", u, " outside [0, ", N,
              ") (the rows of the features it reads)");
  return u;
}

}  // namespace segment_cpu
}  // namespace fusesample
