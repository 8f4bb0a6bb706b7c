// CPU kernel of fusesample::keyed_draws (contract: ../keyed_draws.cpp): the
// sampler's segment draws (rule_positions.h: uniform, or by weight) per
// target under its given key; counts first, then the draws at prefix-summed
// offsets.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <numeric>
#include <vector>

#include "../../common/checks.h"
#include "../../common/floyd.h"
#include "../keyed_draws_checks.h"
#include "../sample_count.h"
#include "rule_positions.h"

namespace fusesample {
namespace {

constexpr const char* kOp = kKeyedDrawsOp;

std::tuple<at::Tensor, at::Tensor, at::Tensor> keyed_draws_cpu(
    const at::Tensor& colptr, const at::Tensor& row, const c10::optional<at::Tensor>& edge_id,
    const at::Tensor& target, const at::Tensor& key, int64_t k, bool replace, int64_t rng_seed,
    int64_t hop, const c10::optional<at::Tensor>& weight_cumsum,
    const c10::optional<at::Tensor>& edge_time, const c10::optional<at::Tensor>& seed_time,
    bool temporal_last, const c10::optional<at::Tensor>& rng_seeds) {
  check_keyed_draws(colptr, row, edge_id, target, key, k, replace, hop, weight_cumsum,
                    edge_time, seed_time, temporal_last);
  check_rng_seeds(target, rng_seeds);
  // (the targets' range and the segments' time order: checked here on the
  // host, by the CUDA kernel on the device, with the same messages)
  check_ids_in_range_cpu(kOp, "target", target, colptr.numel() - 1);
  const KeyedDrawsRule rule_c(weight_cumsum, edge_time, seed_time, temporal_last);
  const SegmentRule& rule = rule_c.rule;
  const auto colptr_c = colptr.contiguous(), row_c = row.contiguous(),
             target_c = target.contiguous(), key_c = key.contiguous();
  c10::optional<at::Tensor> eid_c;
  if (edge_id.has_value()) eid_c = edge_id->contiguous();
  const int64_t m = target.numel();
  const int64_t* ptr = colptr_c.data_ptr<int64_t>();
  const int64_t* tgt = target_c.data_ptr<int64_t>();
  const int64_t* kp = key_c.data_ptr<int64_t>();
  const int64_t* eid = eid_c ? eid_c->data_ptr<int64_t>() : nullptr;
  c10::optional<at::Tensor> seeds_c;
  if (rng_seeds.has_value()) seeds_c = rng_seeds->contiguous();
  const int64_t* seeds = seeds_c ? seeds_c->data_ptr<int64_t>() : nullptr;

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
        // (target i's seed: its batch's, where one call serves several)
        const uint64_t seed = static_cast<uint64_t>(seeds ? seeds[i] : rng_seed);
        rule_positions(seed, a, kp[i], cum ? cum + start : nullptr,
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
