// CPU kernel of fusesample::keyed_draws (contract: ../keyed_draws.cpp): the
// sampler's segment draws (rule_positions.h: uniform, or by weight) per
// target under its given key; counts first, then the draws at prefix-summed
// offsets.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <limits>
#include <numeric>
#include <vector>

#include "../../common/checks.h"
#include "../../common/floyd.h"
#include "../../common/value_checks.h"
#include "../sample_count.h"
#include "rule_positions.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::keyed_draws";

std::tuple<at::Tensor, at::Tensor, at::Tensor> keyed_draws_cpu(
    const at::Tensor& colptr, const at::Tensor& row, const c10::optional<at::Tensor>& edge_id,
    const at::Tensor& target, const at::Tensor& key, int64_t k, bool replace, int64_t rng_seed,
    int64_t hop, const c10::optional<at::Tensor>& weight_cumsum,
    const c10::optional<at::Tensor>& edge_time, const c10::optional<at::Tensor>& seed_time,
    bool temporal_last) {
  check_csc(kOp, colptr, row, edge_id);
  // (row holds global ids, only copied out: its bound is the caller's)
  check_compressed_values_cpu(kOp, "colptr", colptr, "row", row,
                              std::numeric_limits<int64_t>::max());
  check_node_ids(kOp, "target", target, colptr);
  check_ids_in_range_cpu(kOp, "target", target, colptr.numel() - 1);
  check_1d(kOp, "key", key);
  check_dtype(kOp, "key", key, at::kLong);
  check_same_device(kOp, "key", key, "target", target);
  TORCH_CHECK(key.numel() == target.numel(), kOp, ": 'key' must have one entry per target (",
              target.numel(), "), got ", key.numel());
  TORCH_CHECK(k >= -1, kOp, ": 'num_neighbors' must be >= -1, got ", k);
  TORCH_CHECK(hop >= 0, kOp, ": 'hop' must be >= 0, got ", hop);
  // (the sampler's rule checks, seed_time one entry per target: each
  // request carries its root's time, the requester's batch being disjoint)
  check_rule(kOp, row, target, /*disjoint=*/true, replace, edge_time, seed_time,
             temporal_last, weight_cumsum);
  c10::optional<at::Tensor> cum_c, time_c, seed_time_c;
  if (weight_cumsum.has_value()) cum_c = weight_cumsum->contiguous();
  if (edge_time.has_value()) {
    time_c = edge_time->contiguous();
    seed_time_c = seed_time->contiguous();
  }
  SegmentRule rule;
  rule.weight_cumsum = cum_c ? cum_c->data_ptr<double>() : nullptr;
  rule.edge_time = time_c ? time_c->data_ptr<int64_t>() : nullptr;
  rule.seed_time = seed_time_c ? seed_time_c->data_ptr<int64_t>() : nullptr;
  rule.last = temporal_last;
  const auto colptr_c = colptr.contiguous(), row_c = row.contiguous(),
             target_c = target.contiguous(), key_c = key.contiguous();
  c10::optional<at::Tensor> eid_c;
  if (edge_id.has_value()) eid_c = edge_id->contiguous();
  const int64_t m = target.numel();
  const int64_t* ptr = colptr_c.data_ptr<int64_t>();
  const int64_t* tgt = target_c.data_ptr<int64_t>();
  const int64_t* kp = key_c.data_ptr<int64_t>();
  const int64_t* eid = eid_c ? eid_c->data_ptr<int64_t>() : nullptr;

  auto count = at::empty({m}, at::kLong);
  int64_t* cnt = count.data_ptr<int64_t>();
  // (a request's root is itself: seed_time holds one time per request)
  for (int64_t i = 0; i < m; ++i) {
    if (rule.edge_time != nullptr) check_time_sorted(kOp, rule.edge_time, ptr, tgt[i]);
    cnt[i] = sample_count(rule_range(ptr, tgt[i], k, rule, i).degree, k, replace);
  }
  std::vector<int64_t> offset(m + 1, 0);
  std::partial_sum(cnt, cnt + m, offset.begin() + 1);
  auto out_row = at::empty({offset[m]}, at::kLong);
  auto out_edge = at::empty({offset[m]}, at::kLong);
  int64_t* r = out_row.data_ptr<int64_t>();
  int64_t* e = out_edge.data_ptr<int64_t>();
  const int64_t a = draw_key(hop, 1, 0);
  AT_DISPATCH_INDEX_TYPES(row.scalar_type(), "keyed_draws_cpu", [&] {
    const index_t* row_p = row_c.data_ptr<index_t>();
    at::parallel_for(0, m, 256, [&](int64_t lo, int64_t hi) {
      DrawScratch scratch;
      for (int64_t i = lo; i < hi; ++i) {
        const SegmentRange range = rule_range(ptr, tgt[i], k, rule, i);
        const int64_t start = range.start, d = range.degree, out = offset[i];
        const double* cum = rule.weight_cumsum;
        rule_positions(static_cast<uint64_t>(rng_seed), a, kp[i], cum ? cum + start : nullptr,
                       d, k, replace, scratch, [&](int64_t s, int64_t j) {
                         r[out + s] = static_cast<int64_t>(row_p[start + j]);
                         e[out + s] = eid ? eid[start + j] : start + j;
                       });
      }
    });
  });
  return std::make_tuple(count, out_row, out_edge);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("keyed_draws", &keyed_draws_cpu);
}

}  // namespace fusesample
