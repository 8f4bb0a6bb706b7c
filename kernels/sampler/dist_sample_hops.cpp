// fusesample::dist_sample_hops -- every hop of one distributed batch
// (pyg_fusesample.distributed.dist_sampler: DistNeighborSampler.sample), the
// exchanges included, in one call.
//
// Why in C++: a hop is a few composite ops (dist_hop.cpp), keyed_draws and
// four all-to-alls, each issued from Python with its argument checks and
// bookkeeping; and everything Python does holds the GIL, so a loader thread
// sampling the next batch (prefetch) competes with the training step's own
// Python for it. One op runs the whole loop with the GIL released (torch.ops
// calls release it), calling the process group's all-to-all from C++ as
// torch.distributed does from Python.
//
// Contract (int64 index tensors on one device, the process group's):
//   group: the name of a torch.distributed process group (``group_name``),
//     this rank one of its world_size ranks; every rank calls the op, with
//     batches of any size (collective).
//   seed_key [S]: the batch's seed keys (the node, or seed index *
//     num_nodes + node when disjoint); owner_map [num_nodes]: each node's
//     rank; nodes [n]: the global ids owned here, ascending (their rows are
//     colptr's segments: num_types per node, type-major within a node);
//     colptr / row / edge_id / weight_cumsum / edge_time: this rank's CSC, as
//     fusesample::keyed_draws takes it.
//   fanouts [hops * num_types]: hop h's fan-out of edge type t at
//     h * num_types + t; replace, rng_seed, disjoint: the batch's; seed_time
//     [S] (with edge_time): the seeds' times; temporal_last: the 'last'
//     strategy.
//   Several batches in one call (B of them): root_batch [R] (each root's
//     batch; the seed keys rooted, root * num_nodes + node, and disjoint
//     set: a root is a batch, or with a disjoint loader a seed), key_pos
//     [S] (each seed's position in its batch), batch_rng_seeds [B] (each
//     batch's RNG seed, in place of rng_seed). Every rank calls the op in
//     this mode or not alike (its requests carry one more column).
// Returns the batch's keys (seeds, then each hop's new ones), the local ids
// of every draw's source and target and its edge id (grouped by hop, targets
// in batch order, draws in draw order), nodes and edges per hop; with
// root_batch every key's position in its own batch and the per-batch counts
// [2 hops + 1, B] (CPU: nodes per hop, seeds first, then draws per hop;
// one host read), else two empty tensors; the exchanges made (one row
// each: bytes a row, rows sent to each rank, rows received from each; CPU
// int64), the number of host reads (the counts' read not among them) and
// the op's host seconds [in its reads (the counts' included), in its
// all-to-all calls, in the relabelling (which reads its new nodes' count),
// in all] (dist_common.h: Exchanges::host_seconds).
// Per hop: the request sizes (an all-to-all and one host read), the
// requests, then the replies, in one of two forms. Where every fan-out of
// the hop is >= 0, a request has at most K (the hop's fan-outs summed)
// draws, so the replies are padded to K draws each (count, K sources, K edge
// ids: one all-to-all, its sizes the requests'), and one host read gives the
// draws received (with the check that every request was for a node owned
// here). With a fan-out of -1, as the Python loop it replaced did: the draw
// counts, their sizes both ways (one host read, with the check), the
// draws. Then the draws in frontier order and relabelled. Errors: a
// request for a node not owned here raises "rank r was asked for nodes it
// does not own"; a failed exchange raises the process group's error (a peer
// that died, or did not answer within the group's timeout).
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../common/checks.h"
#include "../common/op_handles.h"
#include "dist_common.h"

namespace fusesample {
namespace {

using dist::Exchanges;
using dist::local_rows;
using dist::Splits;
using dist::total;

struct Draws {
  at::Tensor count, row, edge;
};

// The draws of hop `hop` for the requests received: each request's edge
// types in order, as the whole graph's op draws a target's segments
// (segment j * T + t, key field hop * T + t).
Draws serve(const at::Tensor& colptr, const at::Tensor& row,
            const std::optional<at::Tensor>& edge_id, const at::Tensor& local,
            const at::Tensor& position, at::IntArrayRef fanouts, int64_t hop, bool replace,
            int64_t rng_seed, const std::optional<at::Tensor>& weight_cumsum,
            const std::optional<at::Tensor>& edge_time,
            const std::optional<at::Tensor>& seed_time, bool temporal_last,
            const std::optional<at::Tensor>& rng_seeds) {
  const int64_t T = static_cast<int64_t>(fanouts.size());
  const auto& keyed_draws = ops::keyed_draws();
  if (T == 1) {
    auto d = keyed_draws.call(colptr, row, edge_id, local, position, fanouts[0], replace,
                              rng_seed, hop, weight_cumsum, edge_time, seed_time,
                              temporal_last, rng_seeds);
    return {std::get<0>(d), std::get<1>(d), std::get<2>(d)};
  }
  std::vector<at::Tensor> counts, rows, edges, owners;
  for (int64_t t = 0; t < T; ++t) {
    auto d = keyed_draws.call(colptr, row, edge_id, local * T + t, position, fanouts[t],
                              replace, rng_seed, hop * T + t, weight_cumsum, edge_time,
                              seed_time, temporal_last, rng_seeds);
    counts.push_back(std::get<0>(d));
    rows.push_back(std::get<1>(d));
    edges.push_back(std::get<2>(d));
    owners.push_back(at::repeat_interleave(std::get<0>(d),
                                           std::optional<int64_t>(std::get<1>(d).numel())));
  }
  // (a stable sort by request keeps each request's types in order)
  const at::Tensor order =
      std::get<1>(at::sort(at::cat(owners), /*stable=*/true, 0, /*descending=*/false));
  return {at::stack(counts).sum(0), at::cat(rows).index_select(0, order),
          at::cat(edges).index_select(0, order)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, std::vector<int64_t>,
           std::vector<int64_t>, at::Tensor, at::Tensor, at::Tensor, int64_t, std::vector<double>>
dist_sample_hops(const std::string& group, const at::Tensor& seed_key, int64_t num_nodes,
                 const at::Tensor& owner_map, const at::Tensor& nodes,
                 const at::Tensor& colptr, const at::Tensor& row,
                 const std::optional<at::Tensor>& edge_id, at::IntArrayRef fanouts,
                 int64_t num_types, bool replace, int64_t rng_seed, bool disjoint,
                 const std::optional<at::Tensor>& weight_cumsum,
                 const std::optional<at::Tensor>& edge_time,
                 const std::optional<at::Tensor>& seed_time, bool temporal_last,
                 const std::optional<at::Tensor>& root_batch,
                 const std::optional<at::Tensor>& key_pos,
                 at::OptionalIntArrayRef batch_rng_seeds) {
  const char* op = "fusesample::dist_sample_hops";
  check_node_ids(op, "seed_key", seed_key, seed_key, "seed_key");
  check_node_ids(op, "nodes", nodes, seed_key, "seed_key");
  TORCH_CHECK(num_types > 0 && static_cast<int64_t>(fanouts.size()) % num_types == 0, op,
              ": 'fanouts' must hold 'num_types' (", num_types, ") fan-outs a hop, got ",
              fanouts.size());
  Exchanges ex(group);
  double relabel_s = 0.0;  // (host seconds in the relabelling: its own read)
  const int64_t W = ex.world(), T = num_types;
  const int64_t hops = static_cast<int64_t>(fanouts.size()) / T;
  at::Tensor key = seed_key;
  std::vector<at::Tensor> rows, cols, edges;
  std::vector<int64_t> num_sampled_nodes{seed_key.numel()}, num_sampled_edges;
  int64_t begin = 0, end = key.numel();
  // Several batches in one call (root_batch: the batch of each root, the
  // keys rooted, disjoint): every key's position in its own batch (pos) and
  // its batch's RNG seed (key_seed) go with its requests, so that each
  // batch's draws are the ones it gets alone; per hop, the new nodes and
  // the draws of each batch are counted.
  const bool batched = root_batch.has_value();
  at::Tensor pos, key_seed, seeds, base;
  std::vector<at::Tensor> node_counts, edge_counts;
  const int64_t B = batched ? static_cast<int64_t>(batch_rng_seeds->size()) : 0;
  auto batch_of = [&](const at::Tensor& keys) {
    return root_batch->index_select(0, keys.div(num_nodes, "floor"));
  };
  auto count_by = [&](const at::Tensor& batch) {
    return at::zeros({B}, batch.options()).index_add_(0, batch, at::ones_like(batch));
  };
  if (batched) {
    TORCH_CHECK(disjoint && key_pos.has_value() && batch_rng_seeds.has_value() && B > 0, op,
                ": 'root_batch' takes rooted keys (disjoint), 'key_pos' and "
                "'batch_rng_seeds'");
    check_node_ids(op, "root_batch", *root_batch, seed_key, "seed_key");
    check_node_ids(op, "key_pos", *key_pos, seed_key, "seed_key");
    TORCH_CHECK(key_pos->numel() == seed_key.numel(), op, ": 'key_pos' must have one entry "
                "per seed key (", seed_key.numel(), "), got ", key_pos->numel());
    seeds = at::tensor(*batch_rng_seeds, at::kLong).to(seed_key.device());
    const at::Tensor batch = batch_of(seed_key);
    pos = *key_pos;
    key_seed = seeds.index_select(0, batch);
    base = count_by(batch);
    node_counts.push_back(base);
  }
  for (int64_t hop = 0; hop < hops; ++hop) {
    // the frontier's (node, position[, root seed's time]) grouped by owner;
    // their sizes exchanged (a host read), then the requests
    at::Tensor requests, perm, counts, owner;
    std::tie(requests, perm, counts, owner) = ops::dist_requests().call(
        key, begin, end, num_nodes, owner_map, W, seed_time,
        batched ? std::optional<at::Tensor>(pos) : std::nullopt,
        batched ? std::optional<at::Tensor>(key_seed) : std::nullopt);
    Splits sent, asked_counts;
    at::Tensor asked_dev;
    std::tie(sent, asked_counts, asked_dev) = ex.sizes(counts);
    const at::Tensor asked = ex.send(requests, sent, asked_counts);
    // serve the requests received: draws per request, in order
    const at::IntArrayRef hop_fanouts = fanouts.slice(hop * T, T);
    at::Tensor local, foreign;
    std::tie(local, foreign) = local_rows(nodes, asked.select(1, 0).contiguous());
    const std::optional<at::Tensor> asked_time =
        seed_time.has_value() ? std::optional<at::Tensor>(asked.select(1, 2).contiguous())
                              : std::nullopt;
    // (the requests' RNG seeds, their last column, where every rank sends
    // several batches: the call's mode is collective)
    const std::optional<at::Tensor> asked_seed =
        batched ? std::optional<at::Tensor>(asked.select(1, asked.size(1) - 1).contiguous())
                : std::nullopt;
    const Draws draws =
        serve(colptr, row, edge_id, local, asked.select(1, 1).contiguous(),
              hop_fanouts, hop, replace, rng_seed, weight_cumsum, edge_time,
              asked_time, temporal_last, asked_seed);
    at::Tensor src, edge, col;
    if (std::all_of(hop_fanouts.begin(), hop_fanouts.end(), [](int64_t k) { return k >= 0; })) {
      // the replies padded to K draws (sizes: the requests'), then the
      // draws received (a host read, the check of the requests with it)
      const int64_t K = std::accumulate(hop_fanouts.begin(), hop_fanouts.end(), int64_t{0});
      const at::Tensor got = ex.send(
          ops::dist_pad_replies().call(draws.count, draws.row, draws.edge, K), asked_counts,
          sent);
      const Splits read = ex.read(at::stack(
          {got.select(1, 0).sum(), foreign.to(at::kLong).reshape({})}));
      dist::refuse_foreign(read[1] != 0, ex.rank());
      std::tie(src, edge, col) = ops::dist_unpad_replies().call(got, perm, begin, K, read[0]);
    } else {
      // the draw counts back (sizes: the requests'), then the draws' sizes
      // both ways from them (a host read, the check of the requests with
      // it), then the draws
      const at::Tensor got_count = ex.send(draws.count, asked_counts, sent);
      const Splits sizes = ex.read(ops::dist_reply_sizes().call(asked_dev, draws.count, owner,
                                                                got_count, foreign));
      dist::refuse_foreign(sizes[2 * W] != 0, ex.rank());
      const Splits reply_sizes(sizes.begin(), sizes.begin() + W);
      const Splits got_sizes(sizes.begin() + W, sizes.begin() + 2 * W);
      const at::Tensor got =
          ex.send(at::stack({draws.row, draws.edge}, 1), reply_sizes, got_sizes);
      std::tie(src, edge, col) =
          ops::dist_frontier_order().call(got, got_count, perm, begin, total(got_sizes));
    }
    if (disjoint) {  // (the root of the draw's target)
      src = key.index_select(0, col).div(num_nodes, "floor") * num_nodes + src;
    }
    at::Tensor local_src;
    int64_t fresh = 0;
    std::tie(key, local_src, fresh) = ex.clock().time(
        &relabel_s, [&] { return ops::dist_relabel().call(key, src); });
    rows.push_back(local_src);
    cols.push_back(col);
    edges.push_back(edge);
    num_sampled_nodes.push_back(fresh);
    num_sampled_edges.push_back(src.numel());
    if (batched) {  // the new keys' positions in their batches, and the counts
      // (the new keys come grouped by batch, in batch order: relabelled in
      // the order the draws first name them, which is the frontier's, and
      // the frontier is grouped by batch as the seeds are; so a new key's
      // rank among its batch's is its index less its batch's first: O(fresh))
      const at::Tensor batch = batch_of(key.slice(0, end));
      const at::Tensor added = count_by(batch);
      const at::Tensor first = added.cumsum(0) - added;
      const at::Tensor rank = at::arange(fresh, key.options()) - first.index_select(0, batch);
      pos = at::cat({pos, base.index_select(0, batch) + rank});
      key_seed = at::cat({key_seed, seeds.index_select(0, batch)});
      base = base + added;
      node_counts.push_back(added);
      edge_counts.push_back(count_by(batch_of(key.index_select(0, col))));
    }
    begin = end;
    end = key.numel();
  }
  // (one host read for the per-batch counts: [hops + 1 + hops, B])
  at::Tensor batch_counts = at::empty({0}, at::kLong);
  if (batched) {
    node_counts.insert(node_counts.end(), edge_counts.begin(), edge_counts.end());
    batch_counts = ex.to_host(at::stack(node_counts));
  }
  auto cat = [&](const std::vector<at::Tensor>& ts) {
    return ts.empty() ? at::empty({0}, seed_key.options()) : at::cat(ts);
  };
  return {key,
          cat(rows),
          cat(cols),
          cat(edges),
          num_sampled_nodes,
          num_sampled_edges,
          batched ? pos : at::empty({0}, seed_key.options()),
          batch_counts,
          ex.log(),
          ex.host_reads(),
          ex.host_seconds(relabel_s)};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "dist_sample_hops(str group, Tensor seed_key, int num_nodes, Tensor owner_map, "
      "Tensor nodes, Tensor colptr, Tensor row, Tensor? edge_id, int[] fanouts, "
      "int num_types, bool replace, int rng_seed, bool disjoint, Tensor? weight_cumsum, "
      "Tensor? edge_time, Tensor? seed_time, bool temporal_last, Tensor? root_batch=None, "
      "Tensor? key_pos=None, int[]? batch_rng_seeds=None) -> (Tensor node, Tensor row, "
      "Tensor col, Tensor edge, int[] num_sampled_nodes, int[] num_sampled_edges, "
      "Tensor pos, Tensor batch_counts, Tensor exchanges, int host_reads, "
      "float[] host_seconds)");
}

TORCH_LIBRARY_IMPL(fusesample, CompositeExplicitAutograd, m) {
  m.impl("dist_sample_hops", &dist_sample_hops);
}

}  // namespace fusesample
