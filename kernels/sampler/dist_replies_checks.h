// Argument checks of fusesample::dist_pad_replies / dist_unpad_replies
// (contracts: dist_hop.cpp), shared by the composite and the CUDA kernels.
// What they cannot check without reading the device (counts within K and
// summing to the draws, perm a permutation, total the counts' sum) the
// kernels guard instead: no read or write leaves its tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include "../common/checks.h"

namespace fusesample {

inline void check_pad_replies(const char* op, const at::Tensor& count, const at::Tensor& row,
                              const at::Tensor& edge, int64_t K) {
  check_node_ids(op, "count", count, count, "count");
  check_node_ids(op, "row", row, count, "count");
  check_node_ids(op, "edge", edge, count, "count");
  TORCH_CHECK(row.numel() == edge.numel(), op,
              ": 'row' and 'edge' must hold one entry per draw, got ", row.numel(), " and ",
              edge.numel());
  TORCH_CHECK(K >= 0, op, ": 'K' (the draws a request may have) must be >= 0, got ", K);
}

inline void check_unpad_replies(const char* op, const at::Tensor& got, const at::Tensor& perm,
                                int64_t K, int64_t total) {
  TORCH_CHECK(K >= 0, op, ": 'K' (the draws a request may have) must be >= 0, got ", K);
  TORCH_CHECK(got.dim() == 2 && got.size(1) == 1 + 2 * K, op, ": 'got' must be [F, 1 + 2K] = [F, ",
              1 + 2 * K, "], got ", got.sizes());
  check_dtype(op, "got", got, at::kLong);
  check_node_ids(op, "perm", perm, got, "got");
  TORCH_CHECK(perm.numel() == got.size(0), op,
              ": 'perm' must hold one entry per reply (", got.size(0), "), got ", perm.numel());
  TORCH_CHECK(total >= 0 && total <= got.size(0) * K, op, ": 'total' must lie in [0, F K] = [0, ",
              got.size(0) * K, "], got ", total);
}

}  // namespace fusesample
