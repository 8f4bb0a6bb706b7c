// The argument checks of fusesample::in_set_entries that both devices make
// (contract: in_set_entries.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include "../common/checks.h"

namespace fusesample {

constexpr const char* kInSetEntriesOp = "fusesample::in_set_entries";

inline void check_in_set_entries(const at::Tensor& ptr, const at::Tensor& nbr,
                                 const at::Tensor& node, const at::Tensor& group,
                                 const at::Tensor& key, const at::Tensor& set_ptr,
                                 const at::Tensor& skip, int64_t num_nodes) {
  const char* op = kInSetEntriesOp;
  check_1d(op, "ptr", ptr);
  check_1d(op, "nbr", nbr);
  check_1d(op, "node", node);
  check_1d(op, "group", group);
  check_1d(op, "key", key);
  check_1d(op, "set_ptr", set_ptr);
  check_1d(op, "skip", skip);
  check_same_device(op, "ptr", ptr, "node", node);
  check_same_device(op, "nbr", nbr, "node", node);
  check_same_device(op, "group", group, "node", node);
  check_same_device(op, "key", key, "node", node);
  check_same_device(op, "set_ptr", set_ptr, "node", node);
  check_same_device(op, "skip", skip, "node", node);
  check_dtype(op, "ptr", ptr, at::kLong);
  check_index_dtype(op, "nbr", nbr);
  check_dtype(op, "node", node, at::kLong);
  check_dtype(op, "group", group, at::kLong);
  check_dtype(op, "key", key, at::kLong);
  check_dtype(op, "set_ptr", set_ptr, at::kLong);
  check_dtype(op, "skip", skip, at::kBool);
  TORCH_CHECK(ptr.numel() >= 1 && set_ptr.numel() >= 1, op,
              ": 'ptr' and 'set_ptr' must hold at least one offset");
  const int64_t n = node.numel();
  TORCH_CHECK(group.numel() == n && skip.numel() == n, op,
              ": 'node', 'group' and 'skip' must have one entry per position, got ", n, ", ",
              group.numel(), " and ", skip.numel());
  TORCH_CHECK(num_nodes >= 0, op, ": 'num_nodes' must be >= 0, got ", num_nodes);
  // (CPU only, once per graph: kernels/common/value_checks.h)
  check_compressed_values_cpu(op, "ptr", ptr, "nbr", nbr, ptr.numel() - 1);
}

}  // namespace fusesample
