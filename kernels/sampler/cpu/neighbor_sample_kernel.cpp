// CPU kernel of fusesample::neighbor_sample (contract: ../neighbor_sample.cpp).
//
// Per hop: (1) count each target's draws, (2) prefix-sum them into output
// offsets, (3) draw every target's neighbours in parallel (at::parallel_for)
// straight into its slice of the hop's edge arrays, (4) one ordered pass over
// the hop's edges deduplicates and relabels the neighbours through a hash map.
// Step 4 is serial by design: first-appearance order is what makes node ids
// grouped by hop and identical to the CUDA kernel's; it is one hash probe per
// edge, while steps 1-3 carry the random reads of the graph.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "../../common/checks.h"
#include "../../common/node_map.h"
#include "../../common/rng.h"
#include "../sample_count.h"
#include "../segment_rule.h"
#include "rule_positions.h"
#include "../type_counts.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::neighbor_sample";

// Nodes per (node type, hop) and edges per (edge type, hop) of a finished
// sample (type_counts.h); empty when no type tables are given.
std::vector<int64_t> type_counts(const std::vector<int64_t>& node,
                                 const std::vector<int64_t>& edge,
                                 const std::vector<int64_t>& nsn,
                                 const std::vector<int64_t>& nse,
                                 at::IntArrayRef node_offsets,
                                 at::IntArrayRef edge_offsets) {
  if (node_offsets.empty()) return {};
  const int64_t NT = static_cast<int64_t>(node_offsets.size()) - 1;
  const int64_t T = static_cast<int64_t>(edge_offsets.size()) - 1;
  const int64_t L = static_cast<int64_t>(nse.size());
  std::vector<int64_t> counts(type_count_size(NT, T, L), 0);
  int64_t i = 0;
  for (int64_t hop = 0; hop <= L; ++hop)
    for (int64_t end = i + nsn[hop]; i < end; ++i)
      ++counts[type_of(node_offsets.data(), NT + 1, node[i]) * (L + 1) + hop];
  int64_t e = 0;
  for (int64_t hop = 0; hop < L; ++hop)
    for (int64_t end = e + nse[hop]; e < end; ++e)
      ++counts[NT * (L + 1) + type_of(edge_offsets.data(), T + 1, edge[e]) * L + hop];
  return counts;
}

// A visited segment's times must be sorted (the loader sorts them once when
// it builds the graph): its ends are compared, as pyg-lib does.
template <typename index_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
           at::Tensor, at::Tensor, at::Tensor>
sample(const at::Tensor& colptr, const at::Tensor& row,
       const c10::optional<at::Tensor>& edge_id, const at::Tensor& seed,
       const std::vector<int64_t>& num_neighbors, int64_t num_types,
       bool replace, bool disjoint, uint64_t rng_seed,
       at::IntArrayRef node_type_offsets, at::IntArrayRef edge_type_offsets,
       const SegmentRule& rule) {
  const int64_t num_nodes = (colptr.numel() - 1) / num_types;
  const int64_t num_hops = static_cast<int64_t>(num_neighbors.size()) / num_types;
  const int64_t num_seeds = seed.numel();
  const int64_t* colptr_p = colptr.data_ptr<int64_t>();
  const index_t* row_p = row.data_ptr<index_t>();
  const int64_t* eid_p = edge_id.has_value() ? edge_id->data_ptr<int64_t>() : nullptr;
  const int64_t* seed_p = seed.data_ptr<int64_t>();

  std::vector<int64_t> node(seed_p, seed_p + num_seeds);
  std::vector<int64_t> batch;
  if (disjoint) {
    batch.resize(num_seeds);
    std::iota(batch.begin(), batch.end(), 0);
  }
  // Disjoint subtrees dedup (seed index, node) pairs, not nodes.
  auto key_of = [&](int64_t v, int64_t b) {
    return disjoint ? b * num_nodes + v : v;
  };
  NodeMap map(std::max<int64_t>(num_seeds * 8, 1024));
  for (int64_t i = 0; i < num_seeds; ++i)
    map.insert(key_of(node[i], disjoint ? i : 0), i);

  std::vector<int64_t> out_row, out_col, out_edge;
  std::vector<int64_t> num_sampled_nodes{num_seeds}, num_sampled_edges;
  std::vector<int64_t> offsets, hop_nbr;

  int64_t begin = 0, end = num_seeds;  // the frontier: node[begin, end)
  for (int64_t hop = 0; hop < num_hops; ++hop) {
    const int64_t* k = num_neighbors.data() + hop * num_types;
    const int64_t frontier = end - begin;

    offsets.assign(frontier + 1, 0);
    at::parallel_for(0, frontier, 4096, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t v = node[begin + i];
        const int64_t root = disjoint ? batch[begin + i] : 0;
        offsets[i + 1] = target_slots(colptr_p, v, num_types, k, replace, rule, root);
      }
    });
    std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
    const int64_t hop_edges = offsets[frontier];
    const int64_t base = static_cast<int64_t>(out_row.size());

    hop_nbr.resize(hop_edges);
    out_row.resize(base + hop_edges);
    out_col.resize(base + hop_edges);
    out_edge.resize(base + hop_edges);

    at::parallel_for(0, frontier, 256, [&](int64_t lo, int64_t hi) {
      DrawScratch scratch;
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t target_pos = begin + i;
        const int64_t v = node[target_pos];
        const int64_t root = disjoint ? batch[target_pos] : 0;
        int64_t out = offsets[i];
        if (out == offsets[i + 1]) continue;
        for (int64_t t = 0; t < num_types; ++t) {  // segment after segment
          const int64_t seg = v * num_types + t;
          if (rule.edge_time != nullptr) check_time_sorted(kOp, rule.edge_time, colptr_p, seg);
          const SegmentRange r = rule_range(colptr_p, seg, k[t], rule, root);
          const int64_t start = r.start, d = r.degree;
          auto emit = [&](int64_t slot, int64_t j) {
            hop_nbr[out + slot] = static_cast<int64_t>(row_p[start + j]);
            out_col[base + out + slot] = target_pos;
            out_edge[base + out + slot] = eid_p ? eid_p[start + j] : start + j;
          };
          rule_positions(rng_seed, draw_key(hop, num_types, t), target_pos,
                         rule.weight_cumsum ? rule.weight_cumsum + start : nullptr,
                         d, k[t], replace, scratch, emit);
          out += sample_count(d, k[t], replace);
        }
      }
    });

    // Ordered dedup + relabel (see the file comment for why it is serial).
    for (int64_t p = 0; p < hop_edges; ++p) {
      const int64_t v = hop_nbr[p];
      const int64_t b = disjoint ? batch[out_col[base + p]] : 0;
      auto inserted = map.insert(key_of(v, b), static_cast<int64_t>(node.size()));
      if (inserted.second) {
        node.push_back(v);
        if (disjoint) batch.push_back(b);
      }
      out_row[base + p] = inserted.first;
    }

    num_sampled_edges.push_back(hop_edges);
    num_sampled_nodes.push_back(static_cast<int64_t>(node.size()) - end);
    begin = end;
    end = static_cast<int64_t>(node.size());
  }

  auto to_tensor = [](const std::vector<int64_t>& v) {
    auto t = at::empty({static_cast<int64_t>(v.size())}, at::kLong);
    std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
    return t;
  };
  return std::make_tuple(to_tensor(node), to_tensor(out_row), to_tensor(out_col),
                         to_tensor(out_edge), to_tensor(batch),
                         to_tensor(num_sampled_nodes),
                         to_tensor(num_sampled_edges),
                         to_tensor(type_counts(node, out_edge, num_sampled_nodes,
                                               num_sampled_edges, node_type_offsets,
                                               edge_type_offsets)));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
           at::Tensor, at::Tensor, at::Tensor>
neighbor_sample_cpu(const at::Tensor& colptr, const at::Tensor& row,
                    const c10::optional<at::Tensor>& edge_id,
                    const at::Tensor& seed, at::IntArrayRef num_neighbors,
                    bool replace, bool disjoint, int64_t rng_seed,
                    bool /*fused: a CUDA launch mode*/, int64_t num_edge_types,
                    at::IntArrayRef node_type_offsets,
                    at::IntArrayRef edge_type_offsets,
                    at::IntArrayRef edge_type_nodes,
                    const c10::optional<at::Tensor>& edge_time,
                    const c10::optional<at::Tensor>& seed_time, bool temporal_last,
                    const c10::optional<at::Tensor>& weight_cumsum) {
  check_csc(kOp, colptr, row, edge_id);
  check_rule(kOp, row, seed, disjoint, replace, edge_time, seed_time, temporal_last,
             weight_cumsum);
  check_node_ids(kOp, "seed", seed, colptr);
  check_fanouts(kOp, num_neighbors);
  check_edge_types(kOp, colptr, num_neighbors, num_edge_types);
  const int64_t num_nodes = (colptr.numel() - 1) / num_edge_types;
  check_ids_in_range_cpu(kOp, "seed", seed, num_nodes);
  check_typing(kOp, num_nodes, row.numel(), num_edge_types, node_type_offsets,
               edge_type_offsets, edge_type_nodes);
  const int64_t num_counts = type_count_size(
      static_cast<int64_t>(node_type_offsets.size()) - 1, num_edge_types,
      static_cast<int64_t>(num_neighbors.size()) / num_edge_types);
  TORCH_CHECK(node_type_offsets.empty() || num_counts <= kMaxTypeCounts, kOp, ": ",
              num_counts, " type counts (node types x (hops + 1) + edge types x ",
              "hops) exceed the supported ", kMaxTypeCounts);
  check_compressed_values_cpu(kOp, "colptr", colptr, "row", row, num_nodes);

  const auto colptr_c = colptr.contiguous();
  const auto row_c = row.contiguous();
  const auto seed_c = seed.contiguous();
  c10::optional<at::Tensor> eid_c;
  if (edge_id.has_value()) eid_c = edge_id->contiguous();
  const std::vector<int64_t> fanouts(num_neighbors.begin(), num_neighbors.end());
  c10::optional<at::Tensor> time_c, seed_time_c, cumsum_c;
  SegmentRule rule;
  if (edge_time.has_value()) {
    time_c = edge_time->contiguous();
    seed_time_c = seed_time->contiguous();
    rule.edge_time = time_c->data_ptr<int64_t>();
    rule.seed_time = seed_time_c->data_ptr<int64_t>();
    rule.last = temporal_last;
  }
  if (weight_cumsum.has_value()) {
    cumsum_c = weight_cumsum->contiguous();
    rule.weight_cumsum = cumsum_c->data_ptr<double>();
  }
  return AT_DISPATCH_INDEX_TYPES(row.scalar_type(), "neighbor_sample_cpu", [&] {
    return sample<index_t>(colptr_c, row_c, eid_c, seed_c, fanouts,
                           num_edge_types, replace, disjoint,
                           static_cast<uint64_t>(rng_seed), node_type_offsets,
                           edge_type_offsets, rule);
  });
}

// The CPU kernel is synchronous: the outputs at their exact sizes, and meta
// already filled (a bad seed raised above, so the error word is 0).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
neighbor_sample_async_cpu(const at::Tensor& colptr, const at::Tensor& row,
                          const c10::optional<at::Tensor>& edge_id,
                          const at::Tensor& seed, at::IntArrayRef num_neighbors,
                          bool replace, bool disjoint, int64_t rng_seed,
                          int64_t num_edge_types, at::IntArrayRef node_type_offsets,
                          at::IntArrayRef edge_type_offsets,
                          at::IntArrayRef edge_type_nodes,
                          const c10::optional<at::Tensor>& edge_time,
                          const c10::optional<at::Tensor>& seed_time,
                          bool temporal_last,
                          const c10::optional<at::Tensor>& weight_cumsum) {
  auto [node, out_row, out_col, out_edge, batch, nsn, nse, counts] = neighbor_sample_cpu(
      colptr, row, edge_id, seed, num_neighbors, replace, disjoint, rng_seed, true,
      num_edge_types, node_type_offsets, edge_type_offsets, edge_type_nodes,
      edge_time, seed_time, temporal_last, weight_cumsum);
  auto sizes = at::tensor(std::vector<int64_t>{node.numel(), out_row.numel()}, at::kLong);
  auto meta = at::cat({sizes, nsn, nse, at::zeros({1}, at::kLong), counts});
  return std::make_tuple(node, out_row, out_col, out_edge, batch, meta);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("neighbor_sample", &neighbor_sample_cpu);
  m.impl("neighbor_sample_async", &neighbor_sample_async_cpu);
}

}  // namespace fusesample
