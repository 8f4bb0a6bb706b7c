// The host-side bookkeeping of one hop of distributed sampling
// (pyg_fusesample.distributed.dist_sampler), as composite ops: the
// requester's requests grouped by owner, the draws' sizes both ways, the
// draws put back in frontier order, the relabelling of their sources.
//
// Why in C++: a hop of the distributed sampler was ~100 small tensor ops
// issued from Python, and on a GPU its cost was the host's (a batch of 3
// hops: ~9 ms of host work on two H200s against ~3 ms of kernels). Here each
// group of them is one dispatcher call whose ATen calls cost a few us each,
// and runs without the GIL. The kernels are the device's own (CPU or CUDA,
// CompositeExplicitAutograd): the same results bit for bit as the Python
// they replace (tests/test_dist_hop_ops.py keeps it as the reference).
//
// Contracts (every index tensor int64, 1-D unless said, on one device):
//
// dist_requests(key, begin, end, num_nodes, owner_map, world_size,
//               seed_time?) -> (requests, perm, counts, owner)
//   key [K]: the batch's node keys (node, or seed index * num_nodes + node
//     when disjoint); the frontier is key[begin:end]; owner_map
//     [num_nodes]: each node's rank in [0, world_size).
//   perm [F]: the frontier's positions grouped by owner, stable; counts
//   [world_size]: frontier nodes per owner; owner [F]: the owner of each, in
//   perm's order; requests [F, 2] (or [F, 3] with seed_time [S], the root
//   seeds' times of a disjoint batch; one column more with key_seed):
//   (node, position in the batch[, its root seed's time][, its RNG seed])
//   in perm's order. pos [K] (optional): each key's position in its own
//   batch, where one call samples several (else its index in key); key_seed
//   [K] (optional): each key's batch's RNG seed.
//
// dist_reply_sizes(asked_counts, draw_count, owner, got_count, foreign)
//     -> sizes [2 * W + 1]
//   asked_counts [W]: requests received from each rank (grouped by it);
//   draw_count [R]: the draws made for each of them; owner [F] /
//   got_count [F]: the owner of each request sent and its draws received.
//   sizes: the draws to send each rank, the draws to come from each, then
//   `foreign` (a bool scalar: a request was for a node not held here) as 0
//   or 1: one host read for all three.
//
// dist_frontier_order(got, got_count, perm, begin, total) -> (src, edge, col)
//   got [total, 2]: the draws received, (source, edge id), grouped by owner,
//   each owner's in request order; got_count [F]: draws per request, in
//   the same order; perm [F]: the frontier index of each request. Returns
//   the draws target after target in frontier order (each target's in
//   draw order): sources, edge ids and each draw's target's position in the
//   batch (begin + frontier index).
//
// dist_pad_replies(count, row, edge, K) -> reply [R, 1 + 2K]
//   count [R]: the draws an owner made for each request it received (at
//   most K each: K is the hop's fan-outs summed, all >= 0); row / edge
//   [D = count.sum()]: the draws' sources and edge ids, request after
//   request. reply row r: count[r], then its sources, then its edge ids,
//   each in K slots, the unused ones -1. Its rows are the requests', so
//   the reply needs no exchange of sizes. On CUDA a kernel of its own
//   (cuda/dist_replies_kernel.cu: a scan and one fill, where this composite
//   is ~13 launches).
//
// dist_unpad_replies(got, perm, begin, K, total) -> (src, edge, col)
//   got [F, 1 + 2K]: the padded replies received, in perm's order (grouped
//   by owner, each owner's in request order); perm [F]: the frontier index
//   of each; total: the draws in all (got[:, 0].sum(), read by the caller).
//   Returns what dist_frontier_order returns for the same draws: sources,
//   edge ids and targets' batch positions, target after target in
//   frontier order. On CUDA: a scatter, a scan and one fill.
//
// dist_relabel(node, src) -> (node, local, new)
//   node [K]: the batch's keys so far (a seed may repeat; its first
//   position counts), src [D]: the hop's sources' keys. Sources not yet in
//   the batch are appended in order of first appearance; returns the new
//   node list, every source's local id and how many were new. One stable
//   sort of node ++ src; one host read (the number of new nodes). On CUDA a
//   kernel of its own (cuda/dist_relabel_kernel.cu: a hash table, the same
//   results, six launches and the one host read; a key equal to INT64_MIN,
//   the table's empty mark, is refused there).
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cummax.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/index_copy.h>
#include <ATen/ops/masked_select.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

#include "../common/checks.h"
#include "dist_common.h"
#include "dist_replies_checks.h"

namespace fusesample {
namespace {

at::Tensor counts_of(const at::Tensor& group, const at::Tensor& value, int64_t n) {
  // value summed per group id in [0, n) (integers: exact in any order)
  return at::zeros({n}, group.options()).index_add_(0, group, value);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> dist_requests(
    const at::Tensor& key, int64_t begin, int64_t end, int64_t num_nodes,
    const at::Tensor& owner_map, int64_t world_size,
    const c10::optional<at::Tensor>& seed_time, const c10::optional<at::Tensor>& pos,
    const c10::optional<at::Tensor>& key_seed) {
  const char* op = "fusesample::dist_requests";
  check_node_ids(op, "key", key, key, "key");
  check_node_ids(op, "owner_map", owner_map, key, "key");
  TORCH_CHECK(0 <= begin && begin <= end && end <= key.numel(), op,
              ": the frontier [", begin, ", ", end, ") must lie in the ",
              key.numel(), " keys");
  TORCH_CHECK(num_nodes > 0 && world_size > 0, op,
              ": 'num_nodes' and 'world_size' must be positive");
  const at::Tensor keys = key.slice(0, begin, end);
  const at::Tensor frontier = keys.remainder(num_nodes);
  at::Tensor perm, counts, owner;
  std::tie(perm, counts, owner) = dist::by_owner(owner_map, frontier, world_size);
  // (pos and key_seed: one entry per key)
  auto check_per_key = [&](const char* name, const c10::optional<at::Tensor>& t) {
    if (!t.has_value()) return;
    check_node_ids(op, name, *t, key, "key");
    TORCH_CHECK(t->numel() == key.numel(), op, ": '", name, "' must have one entry per key (",
                key.numel(), "), got ", t->numel());
  };
  check_per_key("pos", pos);
  check_per_key("key_seed", key_seed);
  std::vector<at::Tensor> fields = {
      frontier.index_select(0, perm),
      (pos.has_value() ? pos->slice(0, begin, end) : at::arange(begin, end, key.options()))
          .index_select(0, perm)};
  if (seed_time.has_value()) {  // (each node's root seed's time)
    check_node_ids(op, "seed_time", *seed_time, key, "key");
    fields.push_back(
        seed_time->index_select(0, keys.div(num_nodes, "floor")).index_select(0, perm));
  }
  if (key_seed.has_value()) {  // (each node's batch's RNG seed)
    fields.push_back(key_seed->slice(0, begin, end).index_select(0, perm));
  }
  return {at::stack(fields, 1), perm, counts, owner};
}

at::Tensor dist_reply_sizes(const at::Tensor& asked_counts, const at::Tensor& draw_count,
                            const at::Tensor& owner, const at::Tensor& got_count,
                            const at::Tensor& foreign) {
  const char* op = "fusesample::dist_reply_sizes";
  check_node_ids(op, "asked_counts", asked_counts, asked_counts, "asked_counts");
  check_node_ids(op, "draw_count", draw_count, asked_counts, "asked_counts");
  check_node_ids(op, "owner", owner, asked_counts, "asked_counts");
  check_node_ids(op, "got_count", got_count, asked_counts, "asked_counts");
  TORCH_CHECK(owner.numel() == got_count.numel(), op,
              ": 'owner' and 'got_count' must have one entry per request");
  TORCH_CHECK(foreign.numel() == 1, op, ": 'foreign' must be one value");
  const int64_t W = asked_counts.numel();
  // (the rank each received request came from: they are grouped by it)
  const at::Tensor from =
      at::repeat_interleave(asked_counts, c10::optional<int64_t>(draw_count.numel()));
  return at::cat({counts_of(from, draw_count, W), counts_of(owner, got_count, W),
                  foreign.reshape({1}).to(at::kLong)});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> dist_frontier_order(
    const at::Tensor& got, const at::Tensor& got_count, const at::Tensor& perm,
    int64_t begin, int64_t total) {
  const char* op = "fusesample::dist_frontier_order";
  TORCH_CHECK(got.dim() == 2 && got.size(1) == 2 && got.size(0) == total, op,
              ": 'got' must be [total, 2], got ", got.sizes());
  check_dtype(op, "got", got, at::kLong);
  check_node_ids(op, "got_count", got_count, got, "got");
  check_node_ids(op, "perm", perm, got, "got");
  TORCH_CHECK(perm.numel() == got_count.numel(), op,
              ": 'perm' and 'got_count' must have one entry per request");
  // count / start: each frontier node's draws and its first in `got`
  const at::Tensor count = at::empty_like(got_count).index_copy_(0, perm, got_count);
  const at::Tensor start =
      at::empty_like(got_count).index_copy_(0, perm, got_count.cumsum(0) - got_count);
  const at::Tensor target = at::repeat_interleave(count, c10::optional<int64_t>(total));
  // a draw's place in `got`: its target's first, plus its rank among its
  // target's draws (its place in frontier order minus the target's first)
  const at::Tensor place = (start - (count.cumsum(0) - count)).index_select(0, target) +
                           at::arange(total, got.options());
  const at::Tensor drawn = got.index_select(0, place);
  return {drawn.select(1, 0), drawn.select(1, 1), target + begin};
}

// The padded replies' layout: n draws, count[r] of them request r's in
// order, in a row-major [R, width] table whose row r holds request r's draw
// j at column 1 + j (its sources; edge ids K columns on). Returns each
// draw's request and its flat position in the table.
std::tuple<at::Tensor, at::Tensor> reply_slots(const at::Tensor& count, int64_t n,
                                               int64_t width) {
  const at::Tensor request = at::repeat_interleave(count, c10::optional<int64_t>(n));
  const at::Tensor slot = request * width + 1 + at::arange(n, count.options()) -
                          (count.cumsum(0) - count).index_select(0, request);
  return {request, slot};
}

at::Tensor dist_pad_replies(const at::Tensor& count, const at::Tensor& row,
                            const at::Tensor& edge, int64_t K) {
  const char* op = "fusesample::dist_pad_replies";
  check_pad_replies(op, count, row, edge, K);
  const int64_t R = count.numel(), D = row.numel(), width = 1 + 2 * K;
  at::Tensor reply = at::full({R, width}, -1, count.options());
  reply.select(1, 0).copy_(count);
  if (D > 0) {
    const at::Tensor slot = std::get<1>(reply_slots(count, D, width));
    at::Tensor flat = reply.view({-1});
    flat.index_copy_(0, slot, row);
    flat.index_copy_(0, slot + K, edge);
  }
  return reply;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> dist_unpad_replies(const at::Tensor& got,
                                                                  const at::Tensor& perm,
                                                                  int64_t begin, int64_t K,
                                                                  int64_t total) {
  const char* op = "fusesample::dist_unpad_replies";
  check_unpad_replies(op, got, perm, K, total);
  const int64_t width = 1 + 2 * K;
  const at::Tensor ordered = at::empty_like(got).index_copy_(0, perm, got);
  at::Tensor target, slot;  // (in frontier order: a request's target)
  std::tie(target, slot) = reply_slots(ordered.select(1, 0).contiguous(), total, width);
  const at::Tensor flat = ordered.view({-1});
  return {flat.index_select(0, slot), flat.index_select(0, slot + K), target + begin};
}

std::tuple<at::Tensor, at::Tensor, int64_t> dist_relabel(const at::Tensor& node,
                                                         const at::Tensor& src) {
  const char* op = "fusesample::dist_relabel";
  check_node_ids(op, "node", node, node, "node");
  check_node_ids(op, "src", src, node, "node");
  const int64_t n = node.numel();
  const at::Tensor keys = at::cat({node, src});
  at::Tensor ordered, where;
  std::tie(ordered, where) = at::sort(keys, /*stable=*/true, 0, false);
  // the head of each run of equal keys is the key's first occurrence
  at::Tensor head = at::ones_like(ordered, ordered.options().dtype(at::kBool));
  if (keys.numel() > 1) {
    head.slice(0, 1).copy_(ordered.slice(0, 1) != ordered.slice(0, 0, -1));
  }
  const at::Tensor at_ = at::arange(keys.numel(), keys.options());
  const at::Tensor first =
      where.index_select(0, std::get<0>(at::cummax(at::where(head, at_, 0), 0)));
  // a source that is its key's first occurrence is new; the new ones are
  // numbered in source order after the n known nodes
  const at::Tensor fresh = at::zeros_like(head).scatter_(0, where, head & (where >= n));
  const at::Tensor number = fresh.cumsum(0) + (n - 1);
  const at::Tensor local = at::empty_like(first).index_copy_(
      0, where, at::where(first < n, first, number.index_select(0, first)));
  const at::Tensor new_src = src.masked_select(fresh.slice(0, n));  // (one host read)
  return {at::cat({node, new_src}), local.slice(0, n), new_src.numel()};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "dist_requests(Tensor key, int begin, int end, int num_nodes, Tensor owner_map, "
      "int world_size, Tensor? seed_time, Tensor? pos=None, Tensor? key_seed=None) -> "
      "(Tensor requests, Tensor perm, Tensor counts, Tensor owner)");
  m.def(
      "dist_reply_sizes(Tensor asked_counts, Tensor draw_count, Tensor owner, "
      "Tensor got_count, Tensor foreign) -> Tensor");
  m.def(
      "dist_frontier_order(Tensor got, Tensor got_count, Tensor perm, int begin, "
      "int total) -> (Tensor src, Tensor edge, Tensor col)");
  m.def("dist_pad_replies(Tensor count, Tensor row, Tensor edge, int K) -> Tensor");
  m.def(
      "dist_unpad_replies(Tensor got, Tensor perm, int begin, int K, int total) -> "
      "(Tensor src, Tensor edge, Tensor col)");
  m.def("dist_relabel(Tensor node, Tensor src) -> (Tensor node, Tensor local, int new)");
}

TORCH_LIBRARY_IMPL(fusesample, CompositeExplicitAutograd, m) {
  m.impl("dist_requests", &dist_requests);
  m.impl("dist_reply_sizes", &dist_reply_sizes);
  m.impl("dist_frontier_order", &dist_frontier_order);
  m.impl("dist_pad_replies", &dist_pad_replies);
  m.impl("dist_unpad_replies", &dist_unpad_replies);
  m.impl("dist_relabel", &dist_relabel);
}

}  // namespace fusesample
