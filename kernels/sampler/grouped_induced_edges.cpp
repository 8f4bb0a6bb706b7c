// fusesample::grouped_induced_edges -- the induced subgraphs of many node sets
// at once (FusedShaDowKHopSampler's step 3), in ATen ops and segment_search.
//
// Contract (pyg_fusesample.loader.fused_shadow.grouped_induced_edges calls
// it; the Python code it replaced gave the same results bit for bit):
//   ptr [N + 1] int64, nbr [E] int32/int64: adjacency lists, each sorted
//     ascending; edge_id [E] int64 (optional; absent: the slot is the id);
//   node [n] int64: position i holds node node[i] of set group[i]; key [n] =
//     group * num_nodes + node, sorted ascending and unique;
//   parallel_edges: a list may hold a value twice (all copies come out);
//   ordered: sort the result by (pos, slot); hub_factor: a list longer than
//     hub_factor x its set's size is searched, not scanned; budget: the
//     (member, hub) pairs one pass materialises (more run in chunks).
//   Returns (nbr_pos, pos, edge): for every entry of a position's list that
//   lies in the same set, the neighbour's position, the list's position and
//   the entry's edge id. A list up to hub_factor x its set's size is scanned
//   (each entry looked up in its set: in_set_entries), a longer one is
//   binary-searched for every member of the set (segment_search), so a
//   position costs about min(deg, hub_factor |set|).
// Why in C++: the batch then needs no Python, so FusedShaDowKHopSampler's
// native prefetch threads (fusesample.ShadowBatchPrefetcher) make it without
// the GIL. Composite: the device's in_set_entries, segment_search and ATen
// kernels do the work (its gathers through ops::take, which on a GPU is
// gather_rows' kernel); a few host reads of sizes (the scan's total, one per
// chunking of the pairs, one for the set count, one for parallel copies).
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/diff.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "../common/op_handles.h"
#include "grouped_induced_edges.h"

namespace fusesample {
namespace {

struct Chunk {
  int64_t lo, hi, base, size;
};

// Runs of positions whose counts sum to at most `budget` (a single larger
// count is its own run), with the run's start and size in the concatenation
// of all counts. One host read (two when it must cut).
std::vector<Chunk> chunks(const at::Tensor& count, int64_t budget) {
  const int64_t n = count.numel();
  if (n == 0) return {};
  const at::Tensor cum = count.cumsum(0);
  const int64_t total = cum[-1].item<int64_t>();
  if (total <= budget) {
    if (total == 0) return {};
    return {{0, n, 0, total}};
  }
  const at::Tensor cum_host = cum.cpu();
  const int64_t* c = cum_host.data_ptr<int64_t>();
  std::vector<Chunk> out;
  int64_t lo = 0, base = 0;
  while (lo < n) {
    // first position whose inclusive sum exceeds base + budget
    int64_t hi = std::upper_bound(c, c + n, base + budget) - c;
    hi = std::min(std::max(hi, lo + 1), n);
    const int64_t end = c[hi - 1];
    if (end > base) out.push_back({lo, hi, base, end - base});
    lo = hi;
    base = end;
  }
  return out;
}

// For a run of positions lo..hi-1 with `count` items each: every item's
// position and its index (its rank among its position's items plus the
// position's `shift`).
std::tuple<at::Tensor, at::Tensor> expand(const at::Tensor& count, const Chunk& k,
                                          const at::Tensor& shift) {
  const auto options = count.options();
  const at::Tensor pos = at::repeat_interleave(at::arange(k.lo, k.hi, options),
                                               count.slice(0, k.lo, k.hi), 0, k.size);
  at::Tensor index = at::arange(k.base, k.base + k.size, options);
  index += ops::take(shift, pos);
  return {pos, index};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> in_set_entries(
    const at::Tensor& ptr, const at::Tensor& nbr, const at::Tensor& node,
    const at::Tensor& group, const at::Tensor& key, const at::Tensor& set_ptr,
    const at::Tensor& skip, int64_t num_nodes) {
  static const auto op = ops::find<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
      const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
      const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t)>(
      "fusesample::in_set_entries");
  return op.call(ptr, nbr, node, group, key, set_ptr, skip, num_nodes);
}

at::Tensor segment_search(const at::Tensor& sorted, const at::Tensor& first,
                          const at::Tensor& length, const at::Tensor& value, bool upper) {
  static const auto op =
      ops::find<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                           const at::Tensor&, bool)>("fusesample::segment_search");
  return op.call(sorted, first, length, value, upper);
}

}  // namespace

GroupedEdges grouped_induced_edges(const at::Tensor& ptr, const at::Tensor& nbr,
                                   const c10::optional<at::Tensor>& edge_id,
                                   const at::Tensor& node, const at::Tensor& group,
                                   const at::Tensor& key, int64_t num_nodes,
                                   bool parallel_edges, bool ordered, int64_t hub_factor,
                                   int64_t budget) {
  TORCH_CHECK(budget >= 1, "fusesample::grouped_induced_edges: 'budget' must be >= 1, got ",
              budget);
  const int64_t n = node.numel();
  const at::Tensor empty = at::empty({0}, node.options());
  if (n == 0 || nbr.numel() == 0) return {empty, empty, empty};
  const at::Tensor begin = ops::take(ptr, node);
  const at::Tensor deg = ops::take(ptr, node + 1) - begin;
  const int64_t num_groups = group[-1].item<int64_t>() + 1;
  const at::Tensor set_ptr =
      at::searchsorted(key, at::arange(num_groups + 1, node.options()) * num_nodes);
  const at::Tensor set_size = ops::take(at::diff(set_ptr), group);
  const at::Tensor hub = deg > hub_factor * set_size;
  std::vector<at::Tensor> nbr_parts, pos_parts, slot_parts;

  // Short lists: scan them, each entry looked up in its member's set
  // (in_set_entries; hubs are skipped there).
  {
    auto [found, pos, slot] = in_set_entries(ptr, nbr, node, group, key, set_ptr, hub,
                                             num_nodes);
    if (found.numel() > 0) {
      nbr_parts.push_back(found);
      pos_parts.push_back(pos);
      slot_parts.push_back(slot);
    }
  }

  // Long lists: look every member of the set up in them.
  const at::Tensor pair_count = at::where(hub, set_size, at::zeros_like(deg));
  // (a pair's index: its member's position in the set)
  const at::Tensor pair_shift =
      ops::take(set_ptr, group) - (pair_count.cumsum(0) - pair_count);
  const std::vector<Chunk> pair_chunks = chunks(pair_count, budget);
  for (const Chunk& k : pair_chunks) {
    auto [pos, other] = expand(pair_count, k, pair_shift);
    const at::Tensor value = ops::take(node, other).to(nbr.scalar_type());
    const at::Tensor first = ops::take(begin, pos);
    const at::Tensor length = ops::take(deg, pos);
    at::Tensor low = segment_search(nbr, first, length, value, false);
    at::Tensor mult;
    if (parallel_edges) {
      mult = segment_search(nbr, first, length, value, true) - low;
    } else {
      const at::Tensor stop = first + length;
      mult = ((low < stop) & (ops::take(nbr, at::minimum(low, stop - 1)) == value))
                 .to(at::kLong);
    }
    const at::Tensor keep = (mult > 0).nonzero().view(-1);
    pos = ops::take(pos, keep);
    other = ops::take(other, keep);
    low = ops::take(low, keep);
    mult = ops::take(mult, keep);
    if (parallel_edges && (mult > 1).any().item<bool>()) {
      const int64_t total = mult.sum().item<int64_t>();
      const at::Tensor idx = at::repeat_interleave(
          at::arange(mult.numel(), mult.options()), mult, 0, total);
      const at::Tensor step = at::arange(total, mult.options()) -
                              ops::take(mult.cumsum(0) - mult, idx);
      pos = ops::take(pos, idx);
      other = ops::take(other, idx);
      low = ops::take(low, idx) + step;
    }
    nbr_parts.push_back(other);
    pos_parts.push_back(pos);
    slot_parts.push_back(low);
  }

  if (nbr_parts.empty()) return {empty, empty, empty};
  at::Tensor nbr_pos = at::cat(nbr_parts), pos = at::cat(pos_parts),
             slot = at::cat(slot_parts);
  if (ordered && !pair_chunks.empty() && nbr_parts.size() > 1) {  // merge the kinds
    const at::Tensor order =
        std::get<1>(at::sort(pos * std::max<int64_t>(nbr.numel(), 1) + slot));
    nbr_pos = ops::take(nbr_pos, order);
    pos = ops::take(pos, order);
    slot = ops::take(slot, order);
  }
  const at::Tensor edge = edge_id.has_value() ? ops::take(*edge_id, slot) : slot;
  return {nbr_pos, pos, edge};
}

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "grouped_induced_edges(Tensor ptr, Tensor nbr, Tensor? edge_id, Tensor node, "
      "Tensor group, Tensor key, int num_nodes, bool parallel_edges, "
      "bool ordered, int hub_factor, int budget) -> (Tensor nbr_pos, Tensor pos, "
      "Tensor edge)");
}

TORCH_LIBRARY_IMPL(fusesample, CompositeExplicitAutograd, m) {
  m.impl("grouped_induced_edges", &grouped_induced_edges);
}

}  // namespace fusesample
