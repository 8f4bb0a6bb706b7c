// The argument checks of fusesample::keyed_draws that both devices make
// (contract: keyed_draws.cpp), and the rule both read. What each kernel
// checks as it reads (target ids in [0, n_local), time-sorted segments) is
// its own: the CPU kernel on the host, the CUDA kernel on the device, with
// the same messages.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <limits>

#include "../common/checks.h"
#include "../common/value_checks.h"
#include "segment_rule.h"

namespace fusesample {

constexpr const char* kKeyedDrawsOp = "fusesample::keyed_draws";

inline void check_keyed_draws(const at::Tensor& colptr, const at::Tensor& row,
                              const c10::optional<at::Tensor>& edge_id, const at::Tensor& target,
                              const at::Tensor& key, int64_t k, bool replace, int64_t hop,
                              const c10::optional<at::Tensor>& weight_cumsum,
                              const c10::optional<at::Tensor>& edge_time,
                              const c10::optional<at::Tensor>& seed_time, bool temporal_last) {
  const char* op = kKeyedDrawsOp;
  check_csc(op, colptr, row, edge_id);
  // (row holds global ids, only copied out: its bound is the caller's. Once
  // per graph on either device: value_checks.h)
  check_graph_values(op, "colptr", colptr, "row", row, std::numeric_limits<int64_t>::max());
  check_node_ids(op, "target", target, colptr);
  check_1d(op, "key", key);
  check_dtype(op, "key", key, at::kLong);
  check_same_device(op, "key", key, "target", target);
  TORCH_CHECK(key.numel() == target.numel(), op, ": 'key' must have one entry per target (",
              target.numel(), "), got ", key.numel());
  TORCH_CHECK(k >= -1, op, ": 'num_neighbors' must be >= -1, got ", k);
  TORCH_CHECK(hop >= 0, op, ": 'hop' must be >= 0, got ", hop);
  // (the sampler's rule checks, seed_time one entry per target: each
  // request carries its root's time, the requester's batch being disjoint)
  check_rule(op, row, target, /*disjoint=*/true, replace, edge_time, seed_time, temporal_last,
             weight_cumsum);
}

// rng_seeds (optional): one RNG seed per target, in place of rng_seed (the
// requests of several batches in one call, each under its batch's seed).
inline void check_rng_seeds(const at::Tensor& target, const c10::optional<at::Tensor>& seeds) {
  if (!seeds.has_value()) return;
  const char* op = kKeyedDrawsOp;
  check_1d(op, "rng_seeds", *seeds);
  check_dtype(op, "rng_seeds", *seeds, at::kLong);
  check_same_device(op, "rng_seeds", *seeds, "target", target);
  TORCH_CHECK(seeds->numel() == target.numel(), op, ": 'rng_seeds' must have one entry per "
              "target (", target.numel(), "), got ", seeds->numel());
}

// The rule's tensors, contiguous, and the SegmentRule over them (on their
// device; its pointers live as long as this does).
struct KeyedDrawsRule {
  c10::optional<at::Tensor> weight_cumsum, edge_time, seed_time;
  SegmentRule rule;

  KeyedDrawsRule(const c10::optional<at::Tensor>& cum, const c10::optional<at::Tensor>& time,
                 const c10::optional<at::Tensor>& seed_t, bool last) {
    if (cum.has_value()) weight_cumsum = cum->contiguous();
    if (time.has_value()) {
      edge_time = time->contiguous();
      seed_time = seed_t->contiguous();
    }
    rule.weight_cumsum = weight_cumsum ? weight_cumsum->data_ptr<double>() : nullptr;
    rule.edge_time = edge_time ? edge_time->data_ptr<int64_t>() : nullptr;
    rule.seed_time = seed_time ? seed_time->data_ptr<int64_t>() : nullptr;
    rule.last = last;
  }
};

}  // namespace fusesample
