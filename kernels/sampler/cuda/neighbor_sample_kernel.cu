// CUDA kernel of fusesample::neighbor_sample (contract: ../neighbor_sample.cpp;
// phases: sample_phases.cuh). Output is bitwise equal to the CPU kernel's.
//
// Two launch modes over the same device phases:
//  * fused (default when every fan-out is >= 0): buffers sized from the
//    fan-out upper bound, every hop in ONE cooperative launch (1 + 2 * hops
//    grid barriers), ONE host synchronisation per batch (to read the sizes
//    and the error flag);
//  * per-hop (fused=false, or any fan-out -1): one launch per phase and one
//    host synchronisation per hop, so buffers are sized exactly and grow as
//    needed -- the conventional design, kept for the ablation and for
//    unbounded (-1) hops.
// fusesample::neighbor_sample_async is the fused mode without the wait: it
// returns the capacity-sized buffers and a pinned meta the stream fills, so a
// loader can enqueue batch i+1 behind batch i's training step and read it
// later without stalling the GPU.
// Memory comes from PyTorch's caching allocator, work runs on the current
// stream, every launch is checked.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "../../common/checks.h"
#include "sample_kernels.cuh"

namespace fusesample {
namespace {

using namespace cuda_sampler;
constexpr const char* kOp = "fusesample::neighbor_sample";

int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > std::numeric_limits<int64_t>::max() / b
             ? std::numeric_limits<int64_t>::max() : a * b;
}

// Grows `t` to at least `need` entries, keeping its first `keep`.
void grow(at::Tensor& t, int64_t need, int64_t keep) {
  if (t.numel() >= need) return;
  auto bigger = at::empty({std::max(need, 2 * t.numel())}, t.options());
  if (keep > 0) bigger.narrow(0, 0, keep).copy_(t.narrow(0, 0, keep));
  t = bigger;
}

struct Table {
  at::Tensor key, first, value;
  HashTable view() const {
    return HashTable{reinterpret_cast<unsigned long long*>(key.data_ptr<int64_t>()),
                     reinterpret_cast<long long*>(first.data_ptr<int64_t>()),
                     reinterpret_cast<long long*>(value.data_ptr<int64_t>()),
                     static_cast<uint64_t>(key.numel() - 1)};
  }
};

// Open-addressing table of at least 2 * entries slots (load <= 1/2), in one
// allocation initialised by two memsets: keys to all-ones (kEmptyKey), and
// first/value to 0x7f7f... -- a large positive "infinity" for atomicMin.
Table make_table(int64_t entries, const at::TensorOptions& opts,
                 cudaStream_t stream) {
  int64_t cap = 1024;
  while (cap < 2 * entries) cap <<= 1;
  auto all = at::empty({3 * cap}, opts);
  int64_t* p = all.data_ptr<int64_t>();
  C10_CUDA_CHECK(cudaMemsetAsync(p, 0xff, cap * sizeof(int64_t), stream));
  C10_CUDA_CHECK(cudaMemsetAsync(p + cap, 0x7f, 2 * cap * sizeof(int64_t), stream));
  return Table{all.narrow(0, 0, cap), all.narrow(0, cap, cap),
               all.narrow(0, 2 * cap, cap)};
}

// Look-back state of `tiles` scan tiles in 5 * tiles words: the status words
// first (the part that must start zeroed), then the aggregate and the
// inclusive-prefix pairs.
int64_t tile_words(int64_t tiles) { return 5 * tiles; }
TileState tile_state(int64_t* p, int64_t tiles) {
  return TileState{reinterpret_cast<unsigned long long*>(p),
                   reinterpret_cast<Pair*>(p + tiles),
                   reinterpret_cast<Pair*>(p + 3 * tiles)};
}

struct State {
  // `tables`: the fan-outs [L*T], then (typed samples) the node and edge
  // type offsets [NT+1], [T+1], copied to the device in one transfer.
  at::Tensor node, batch, out_row, out_col, out_edge, pos, offsets,
      next_offsets, totals, tables, meta, tile_buf;
  at::Tensor wkey;  // weighted draws without replacement: keys beside pos
  int64_t tiles = 0;
  int64_t num_node_types = 0, num_edge_types = 0, num_fanouts = 0;
  Buffers view(int num_hops) {
    int64_t* meta_p = meta.data_ptr<int64_t>();
    const int64_t* type_offsets = tables.data_ptr<int64_t>() + num_fanouts;
    return Buffers{node.data_ptr<int64_t>(),
                   batch.defined() ? batch.data_ptr<int64_t>() : nullptr,
                   out_row.data_ptr<int64_t>(), out_col.data_ptr<int64_t>(),
                   out_edge.data_ptr<int64_t>(), pos.data_ptr<int64_t>(),
                   offsets.data_ptr<int64_t>(),
                   next_offsets.data_ptr<int64_t>(), totals.data_ptr<int64_t>(),
                   meta_p, num_hops,
                   tile_state(tile_buf.data_ptr<int64_t>(), tiles),
                   reinterpret_cast<unsigned long long*>(meta_p + 3 + 2 * num_hops),
                   type_offsets, type_offsets + num_node_types + 1,
                   num_node_types, num_edge_types, meta_p + 4 + 2 * num_hops,
                   node.numel(), out_row.numel(), pos.numel() - 1,
                   next_offsets.numel() - 1,
                   wkey.defined() ? wkey.data_ptr<double>() : nullptr};
  }
  // Per-hop path: room for a scan of n items; fresh status words are zero.
  void grow_tiles(int64_t n) {
    const int64_t need = tiles_of(n);
    if (need <= tiles) return;
    tiles = std::max(need, 2 * tiles);
    tile_buf = at::zeros({tile_words(tiles)}, meta.options());
  }
  static int64_t tiles_of(int64_t n) { return std::max<int64_t>(1, (n + kTile - 1) / kTile); }
};

// The per-hop path's synchronisation, once per hop: the last scan's totals
// (new nodes, the next hop's slots), so every buffer is sized exactly.
std::pair<int64_t, int64_t> read_totals(const State& s, cudaStream_t stream) {
  int64_t host[2];
  C10_CUDA_CHECK(cudaMemcpyAsync(host, s.totals.data_ptr<int64_t>(), sizeof(host),
                                 cudaMemcpyDeviceToHost, stream));
  C10_CUDA_CHECK(cudaStreamSynchronize(stream));
  return {host[0], host[1]};
}

// The per-hop path's type counts (typed samples only).
void launch_type_counts(const Launch& l, State& s, int num_hops) {
  if (s.num_node_types == 0) return;
  type_counts_kernel<<<l.blocks, kThreads, 0, l.stream>>>(s.view(num_hops));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// One kernel per phase (the ablation of the fused launch, and the path for
// unbounded -1 fan-outs): buffers and the table grow as the hops need.
template <typename index_t>
void sample_per_hop(const Graph<index_t>& g, const Params& p, const at::Tensor& seed,
                    const Fanouts& f, int64_t key_space, const Launch& l, State& s,
                    Table& table) {
  const int num_hops = f.num;
  s.grow_tiles(p.num_seeds);
  seeds_kernel<index_t><<<l.blocks, kThreads, 0, l.stream>>>(
      g, p, seed.data_ptr<int64_t>(), s.view(num_hops), table.view(), f.k);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (num_hops == 0) return launch_type_counts(l, s, num_hops);
  Hop h{0, f.k, 0, p.num_seeds, 0, read_totals(s, l.stream).second};
  Hop prev{-1, nullptr, 0, 0, 0, 0};
  for (int hop = 0; hop < num_hops; ++hop) {
    // This hop's slots, and at most as many new nodes.
    grow(s.pos, h.edges + 1, 0);
    if (s.wkey.defined()) grow(s.wkey, h.edges + 1, 0);
    grow(s.next_offsets, h.edges + 1, 0);
    for (at::Tensor* out : {&s.out_row, &s.out_col, &s.out_edge})
      grow(*out, h.base + h.edges, h.base);
    grow(s.node, h.end + h.edges, h.end);
    if (s.batch.defined()) grow(s.batch, h.end + h.edges, h.end);
    s.grow_tiles(h.edges);
    const Buffers b = s.view(num_hops);
    if (2 * std::min(h.end + h.edges, key_space) > table.key.numel()) {
      table = make_table(std::min(h.end + h.edges, key_space), s.meta.options(), l.stream);
      rehash_kernel<index_t><<<l.blocks, kThreads, 0, l.stream>>>(g, p, b, table.view(),
                                                                  h.end);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    const HashTable t = table.view();
    sample_kernel<index_t><<<l.blocks, kThreads, 0, l.stream>>>(g, p, b, t, h, prev);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const bool has_next = hop + 1 < num_hops;
    const int64_t* next_k = has_next ? f.k + (hop + 1) * g.num_types : nullptr;
    dedup_kernel<index_t><<<l.blocks, kThreads, 0, l.stream>>>(g, p, b, t, h, has_next,
                                                               next_k);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    prev = h;
    if (!has_next) break;
    const auto totals = read_totals(s, l.stream);
    h = next_hop(h, next_k, totals.first, totals.second);
    std::swap(s.offsets, s.next_offsets);
  }
  relabel_kernel<index_t><<<l.blocks, kThreads, 0, l.stream>>>(
      g, p, s.view(num_hops), table.view(), prev);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  launch_type_counts(l, s, num_hops);
}

// A batch whose kernels are enqueued: the buffers its outputs are prefixes
// of, and the host copy of meta ([n, m, nsn, nse, error]) that the stream
// fills -- pinned, so the copy is asynchronous and nothing here waits.
struct Launched {
  State s;
  at::Tensor meta;
};

// Typed-sample information (type_counts.h); empty for untyped samples.
struct Typing {
  std::vector<int64_t> node_offsets, edge_offsets, edge_nodes;
  int64_t num_node_types() const {
    return node_offsets.empty() ? 0 : static_cast<int64_t>(node_offsets.size()) - 1;
  }
};

int64_t sat_add(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b
             ? std::numeric_limits<int64_t>::max() : a + b;
}

// Buffer sizes of a fused launch, from the fan-outs. The frontier is tracked
// per node type (one type holding every node when untyped): hop h draws at
// most F[dst(t)] * k_t edges of type t, whose sources, of type src(t), are
// at most that many new nodes -- and at most the type's key space.
struct Capacity {
  int64_t node, edge = 0, hop_edge = 0, frontier;
};

Capacity capacity(const std::vector<int64_t>& fanouts, int64_t num_types,
                  const Typing& typing, int64_t num_seeds, int64_t num_nodes,
                  bool disjoint) {
  const int64_t per_seed = disjoint ? num_seeds : 1;
  const int64_t key_space = sat_mul(per_seed, num_nodes);
  const int64_t NT = typing.num_node_types();
  std::vector<int64_t> size, F;
  if (NT == 0) {
    size = {key_space};
  } else {
    for (int64_t i = 0; i < NT; ++i)
      size.push_back(sat_mul(per_seed, typing.node_offsets[i + 1] - typing.node_offsets[i]));
  }
  for (int64_t n : size) F.push_back(std::min(num_seeds, n));
  Capacity c{num_seeds, 0, 0, num_seeds};
  const int64_t hops = static_cast<int64_t>(fanouts.size()) / num_types;
  for (int64_t hop = 0; hop < hops; ++hop) {
    std::vector<int64_t> next(F.size(), 0);
    int64_t edges = 0;
    for (int64_t t = 0; t < num_types; ++t) {
      const int64_t src = NT ? typing.edge_nodes[2 * t] : 0;
      const int64_t dst = NT ? typing.edge_nodes[2 * t + 1] : 0;
      const int64_t drawn = sat_mul(F[dst], fanouts[hop * num_types + t]);
      edges = sat_add(edges, drawn);
      next[src] = sat_add(next[src], drawn);
    }
    int64_t frontier = 0;
    for (size_t i = 0; i < next.size(); ++i) {
      next[i] = std::min(next[i], size[i]);
      frontier = sat_add(frontier, next[i]);
    }
    c.edge = sat_add(c.edge, edges);
    c.hop_edge = std::max(c.hop_edge, edges);
    c.frontier = std::max(c.frontier, frontier);
    c.node = sat_add(c.node, frontier);
    F = std::move(next);
  }
  c.node = std::min(c.node, sat_add(key_space, num_seeds));
  return c;
}

template <typename index_t>
Launched launch_sample(const at::Tensor& colptr, const at::Tensor& row,
                       const c10::optional<at::Tensor>& edge_id,
                       const at::Tensor& seed, const std::vector<int64_t>& fanouts,
                       int64_t num_types, const Typing& typing, bool replace,
                       bool disjoint, uint64_t rng_seed, bool fused,
                       const SegmentRule& rule) {
  // The sampling device is the seeds' (the graph may be in pinned host
  // memory, read in place).
  const auto opts = seed.options();
  const int64_t num_nodes = (colptr.numel() - 1) / num_types;
  const int64_t num_seeds = seed.numel();
  const int num_hops = static_cast<int>(fanouts.size() / num_types);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();

  const Graph<index_t> g{colptr.data_ptr<int64_t>(), row.data_ptr<index_t>(),
                         edge_id.has_value() ? edge_id->data_ptr<int64_t>() : nullptr,
                         num_nodes, num_types, rule};
  const Params p{num_seeds, rng_seed, replace, disjoint};

  // Upper bounds from the fan-outs (unbounded if any hop takes all: the
  // per-hop path grows its buffers instead).
  const int64_t key_space = disjoint ? sat_mul(num_seeds, num_nodes) : num_nodes;
  const bool bounded = std::all_of(fanouts.begin(), fanouts.end(),
                                   [](int64_t k) { return k >= 0; });
  const bool one_launch = fused && bounded;
  const Capacity cap = bounded ? capacity(fanouts, num_types, typing, num_seeds,
                                          num_nodes, disjoint)
                               : Capacity{num_seeds, 0, 0, num_seeds};

  // Outputs are separate tensors (they outlive the call); the scratch is
  // carved out of one allocation, its zeroed part (meta with the type
  // counts, then the scans' status words) contiguous so one memset clears it.
  State s;
  s.num_node_types = typing.num_node_types();
  s.num_edge_types = s.num_node_types ? num_types : 0;
  s.num_fanouts = static_cast<int64_t>(fanouts.size());
  s.node = at::empty({std::max<int64_t>(cap.node, 1)}, opts);
  if (disjoint) s.batch = at::empty({std::max<int64_t>(cap.node, 1)}, opts);
  s.out_row = at::empty({std::max<int64_t>(cap.edge, 1)}, opts);
  s.out_col = at::empty_like(s.out_row);
  s.out_edge = at::empty_like(s.out_row);
  s.tiles = one_launch ? State::tiles_of(std::max(num_seeds, cap.hop_edge)) : 0;
  if (rule.weight_cumsum && !replace)
    s.wkey = at::empty({cap.hop_edge + 1}, opts.dtype(at::kDouble));
  std::vector<int64_t> tables(fanouts);
  tables.insert(tables.end(), typing.node_offsets.begin(), typing.node_offsets.end());
  tables.insert(tables.end(), typing.edge_offsets.begin(), typing.edge_offsets.end());
  {
    const int64_t meta_words =
        4 + 2 * num_hops + type_count_size(s.num_node_types, s.num_edge_types, num_hops);
    const int64_t sizes[] = {cap.hop_edge + 1, cap.frontier + 1, cap.frontier + 1, 2,
                             static_cast<int64_t>(tables.size()), meta_words,
                             tile_words(s.tiles)};
    int64_t total = 0;
    for (int64_t n : sizes) total += n;
    auto scratch = at::empty({total}, opts);
    at::Tensor* views[] = {&s.pos, &s.offsets, &s.next_offsets, &s.totals,
                           &s.tables, &s.meta, &s.tile_buf};
    int64_t at_ = 0;
    for (int i = 0; i < 7; ++i) {
      *views[i] = scratch.narrow(0, at_, sizes[i]);
      at_ += sizes[i];
    }
    // meta and the status words (the first s.tiles of tile_buf) are zeroed.
    C10_CUDA_CHECK(cudaMemsetAsync(s.meta.data_ptr<int64_t>(), 0,
                                   (meta_words + s.tiles) * sizeof(int64_t), stream));
  }
  // The tables the phases read, from pinned memory: no host wait.
  if (!tables.empty()) {
    auto host = at::empty({static_cast<int64_t>(tables.size())},
                          at::TensorOptions().dtype(at::kLong).pinned_memory(true));
    std::copy(tables.begin(), tables.end(), host.data_ptr<int64_t>());
    s.tables.copy_(host, /*non_blocking=*/true);
  }
  const Fanouts f{s.tables.data_ptr<int64_t>(), num_hops};
  const int64_t node_cap = cap.node;
  Table table = make_table(std::min(node_cap, key_space), opts, stream);

  int blocks = 0;
  C10_CUDA_CHECK(persistent_blocks<index_t>(seed.get_device(), &blocks));
  const Launch l{blocks, stream};

  if (fused && !bounded)
    TORCH_WARN_ONCE(kOp, ": a fan-out of -1 has no upper bound, so the "
                    "per-hop path (one host sync per hop) samples instead of "
                    "the fused single launch");
  if (one_launch) {
    C10_CUDA_CHECK(launch_fused<index_t>(l, g, p, seed.data_ptr<int64_t>(),
                                         s.view(num_hops), table.view(), f));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  } else {
    sample_per_hop(g, p, seed, f, key_space, l, s, table);
  }
  // copy_ (not a raw cudaMemcpyAsync) so the pinned block is marked as used
  // by the stream: freed early, the host allocator will not reuse it before
  // the copy has landed.
  auto meta = at::empty({s.meta.numel()},
                        at::TensorOptions().dtype(at::kLong).pinned_memory(true));
  meta.copy_(s.meta, /*non_blocking=*/true);
  return {std::move(s), std::move(meta)};
}

using SampleTuple = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                               at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using AsyncTuple = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                              at::Tensor, at::Tensor>;

// Contiguous, checked inputs on the graph's device (both ops' prologue).
struct Inputs {
  at::Tensor colptr, row, seed;
  c10::optional<at::Tensor> edge_id;
  std::vector<int64_t> fanouts;  // [hops * num_types], hop-major
  int64_t num_types;
  Typing typing;
  // Temporal / weighted sampling (segment_rule.h): contiguous, or none.
  c10::optional<at::Tensor> edge_time, seed_time, weight_cumsum;
  bool temporal_last = false;
  SegmentRule rule() const {
    SegmentRule r;
    if (edge_time.has_value()) {
      r.edge_time = edge_time->data_ptr<int64_t>();
      r.seed_time = seed_time->data_ptr<int64_t>();
      r.last = temporal_last;
    }
    if (weight_cumsum.has_value()) r.weight_cumsum = weight_cumsum->data_ptr<double>();
    return r;
  }
  int64_t num_hops() const { return static_cast<int64_t>(fanouts.size()) / num_types; }
  int64_t num_type_counts() const {
    return type_count_size(typing.num_node_types(), num_types, num_hops());
  }
};

// The sampling device is the seeds' (the graph may be in pinned host
// memory): checked before a device guard is built from it, so that a CPU
// 'seed' gets this op's message rather than the guard's.
c10::Device sampling_device(const at::Tensor& colptr, const at::Tensor& seed) {
  if (colptr.is_cpu())
    check_host_graph(kOp, seed, {});
  else
    check_same_device(kOp, "seed", seed, "colptr", colptr);
  return seed.device();
}

Inputs checked_inputs(const at::Tensor& colptr, const at::Tensor& row,
                      const c10::optional<at::Tensor>& edge_id,
                      const at::Tensor& seed, at::IntArrayRef num_neighbors,
                      int64_t num_types, at::IntArrayRef node_type_offsets,
                      at::IntArrayRef edge_type_offsets,
                      at::IntArrayRef edge_type_nodes, bool disjoint, bool replace,
                      const c10::optional<at::Tensor>& edge_time,
                      const c10::optional<at::Tensor>& seed_time, bool temporal_last,
                      const c10::optional<at::Tensor>& weight_cumsum) {
  check_csc(kOp, colptr, row, edge_id);
  check_rule(kOp, row, seed, disjoint, replace, edge_time, seed_time, temporal_last,
             weight_cumsum);
  if (colptr.is_cpu())  // sampled in place through unified addressing
    check_host_graph(kOp, seed, {{"colptr", &colptr}, {"row", &row},
                                 {"edge_id", edge_id ? &*edge_id : nullptr},
                                 {"edge_time", edge_time ? &*edge_time : nullptr},
                                 {"weight_cumsum", weight_cumsum ? &*weight_cumsum : nullptr}});
  else
    check_node_ids(kOp, "seed", seed, colptr);
  check_fanouts(kOp, num_neighbors);
  check_edge_types(kOp, colptr, num_neighbors, num_types);
  const int64_t hops = static_cast<int64_t>(num_neighbors.size()) / num_types;
  TORCH_CHECK(hops <= kMaxHops, kOp, ": at most ", kMaxHops,
              " hops are supported, got ", hops);
  check_typing(kOp, (colptr.numel() - 1) / num_types, row.numel(), num_types,
               node_type_offsets, edge_type_offsets, edge_type_nodes);
  // The kernel follows colptr and row unchecked: their values once per graph.
  check_graph_values(kOp, "colptr", colptr, "row", row, (colptr.numel() - 1) / num_types);
  auto vec = [](at::IntArrayRef v) { return std::vector<int64_t>(v.begin(), v.end()); };
  Inputs in{colptr.contiguous(), row.contiguous(), seed.contiguous(), c10::nullopt,
            vec(num_neighbors), num_types,
            Typing{vec(node_type_offsets), vec(edge_type_offsets), vec(edge_type_nodes)}};
  TORCH_CHECK(in.num_type_counts() <= kMaxTypeCounts, kOp, ": ",
              in.num_type_counts(), " type counts (node types x (hops + 1) + edge ",
              "types x hops) exceed the supported ", kMaxTypeCounts);
  if (edge_id.has_value()) in.edge_id = edge_id->contiguous();
  if (edge_time.has_value()) {
    in.edge_time = edge_time->contiguous();
    in.seed_time = seed_time->contiguous();
    in.temporal_last = temporal_last;
  }
  if (weight_cumsum.has_value()) in.weight_cumsum = weight_cumsum->contiguous();
  return in;
}

// An empty batch launches nothing: empty buffers and a zero meta on the host
// (both ops read it as n = m = 0, every count 0, no error).
Launched launch(const Inputs& in, bool replace, bool disjoint, int64_t rng_seed,
                bool fused) {
  if (in.seed.numel() == 0) {
    State s;
    for (at::Tensor* t : {&s.node, &s.out_row, &s.out_col, &s.out_edge, &s.batch})
      *t = at::empty({0}, in.seed.options());
    const int64_t meta_words = 4 + 2 * in.num_hops() + in.num_type_counts();
    return {std::move(s), at::zeros({meta_words}, at::TensorOptions().dtype(at::kLong))};
  }
  return AT_DISPATCH_INDEX_TYPES(in.row.scalar_type(), "neighbor_sample_cuda", [&] {
    return launch_sample<index_t>(in.colptr, in.row, in.edge_id, in.seed, in.fanouts,
                                  in.num_types, in.typing, replace, disjoint,
                                  static_cast<uint64_t>(rng_seed), fused, in.rule());
  });
}

void check_error(int64_t error, const Inputs& in) {
  TORCH_CHECK(error != kOverCapacity, kOp, ": the sample outgrew the buffers "
              "sized from 'edge_type_nodes': they do not describe the graph's "
              "edge types");
  TORCH_CHECK(error == kOk, kOp, ": 'seed' holds ids outside [0, ",
              (in.colptr.numel() - 1) / in.num_types, ")");
}

SampleTuple neighbor_sample_cuda(const at::Tensor& colptr, const at::Tensor& row,
                                 const c10::optional<at::Tensor>& edge_id,
                                 const at::Tensor& seed, at::IntArrayRef num_neighbors,
                                 bool replace, bool disjoint, int64_t rng_seed,
                                 bool fused, int64_t num_edge_types,
                                 at::IntArrayRef node_type_offsets,
                                 at::IntArrayRef edge_type_offsets,
                                 at::IntArrayRef edge_type_nodes,
                                 const c10::optional<at::Tensor>& edge_time,
                                 const c10::optional<at::Tensor>& seed_time,
                                 bool temporal_last,
                                 const c10::optional<at::Tensor>& weight_cumsum) {
  c10::cuda::CUDAGuard guard(sampling_device(colptr, seed));
  const Inputs in = checked_inputs(colptr, row, edge_id, seed, num_neighbors,
                                   num_edge_types, node_type_offsets,
                                   edge_type_offsets, edge_type_nodes, disjoint, replace,
                                   edge_time, seed_time, temporal_last, weight_cumsum);
  const int64_t num_hops = in.num_hops();
  Launched b = launch(in, replace, disjoint, rng_seed, fused);
  // The one synchronisation of the batch (the last of the per-hop path).
  if (seed.numel() > 0)
    C10_CUDA_CHECK(cudaStreamSynchronize(at::cuda::getCurrentCUDAStream()));
  const int64_t* m = b.meta.data_ptr<int64_t>();
  check_error(m[3 + 2 * num_hops], in);
  const int64_t n = m[0], e = m[1];
  const State& s = b.s;
  return std::make_tuple(s.node.narrow(0, 0, n), s.out_row.narrow(0, 0, e),
                         s.out_col.narrow(0, 0, e), s.out_edge.narrow(0, 0, e),
                         disjoint ? s.batch.narrow(0, 0, n) : at::empty({0}, seed.options()),
                         b.meta.narrow(0, 2, num_hops + 1).clone(),
                         b.meta.narrow(0, 3 + num_hops, num_hops).clone(),
                         b.meta.narrow(0, 4 + 2 * num_hops, in.num_type_counts()).clone());
}

// The same batch, not waited for: the buffers and the pinned meta, which the
// caller reads once the stream has passed this call (see the schema).
AsyncTuple neighbor_sample_async_cuda(const at::Tensor& colptr, const at::Tensor& row,
                                      const c10::optional<at::Tensor>& edge_id,
                                      const at::Tensor& seed,
                                      at::IntArrayRef num_neighbors, bool replace,
                                      bool disjoint, int64_t rng_seed,
                                      int64_t num_edge_types,
                                      at::IntArrayRef node_type_offsets,
                                      at::IntArrayRef edge_type_offsets,
                                      at::IntArrayRef edge_type_nodes,
                                      const c10::optional<at::Tensor>& edge_time,
                                      const c10::optional<at::Tensor>& seed_time,
                                      bool temporal_last,
                                      const c10::optional<at::Tensor>& weight_cumsum) {
  c10::cuda::CUDAGuard guard(sampling_device(colptr, seed));
  const Inputs in = checked_inputs(colptr, row, edge_id, seed, num_neighbors,
                                   num_edge_types, node_type_offsets,
                                   edge_type_offsets, edge_type_nodes, disjoint, replace,
                                   edge_time, seed_time, temporal_last, weight_cumsum);
  Launched b = launch(in, replace, disjoint, rng_seed, /*fused=*/true);
  const State& s = b.s;
  return std::make_tuple(s.node, s.out_row, s.out_col, s.out_edge,
                         disjoint ? s.batch : at::empty({0}, seed.options()),
                         b.meta);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("neighbor_sample", &neighbor_sample_cuda);
  m.impl("neighbor_sample_async", &neighbor_sample_async_cuda);
}

}  // namespace fusesample
