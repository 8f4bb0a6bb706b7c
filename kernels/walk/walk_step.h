// One walk of fusesample::random_walk, shared verbatim by the CPU and CUDA
// kernels: both run walk_one() per walk, so they draw the same numbers and
// take the same branches, and their outputs are bitwise equal.
//
// A second-order (node2vec) step is rejection sampling, as in the node2vec
// paper's alias-free variants: propose x from the first-order distribution
// of the current node v (uniform or by weight: O(1) or O(log deg) reads),
// then accept with probability alpha(prev, x) / max(alpha), where alpha is
// 1/p if x is the previous node, 1 if x is an out-neighbour of it (a binary
// search in its sorted row), 1/q otherwise. The expected number of trials is
// max(alpha) / E[alpha] -- a handful for the usual p, q -- and never a scan
// of either row. Extreme (p, q) on an unlucky pair of rows could make
// trials rare, so after kMaxTrials rejections the step falls back to an
// exact draw over v's row (O(deg * log deg(prev))). Mixing the two is still
// exact: every trial is independent, so whichever one settles the step, its
// outcome has the target distribution.
#pragma once

#include <cstdint>

#include "../common/det_math.h"
#include "../common/rng.h"
#include "../common/weighted_draw.h"

namespace fusesample {
namespace walk {

// The last field of a draw's key: the trial number for proposals, with the
// top bits reserved for the other draws of a step.
constexpr uint64_t kAcceptDraw = 1ULL << 62;   // | trial: accept trial t?
constexpr uint64_t kExactDraw = ~0ULL - 1;     // the exact fallback
constexpr uint64_t kRestartDraw = ~0ULL;       // jump back to the start?
constexpr uint64_t kFrontierDraw = ~0ULL - 2;  // multi-root: which node moves
constexpr int kMaxTrials = 64;

template <typename index_t>
struct WalkGraph {
  const int64_t* rowptr;
  const index_t* col;           // sorted within rows when second order
  const int64_t* edge_id;       // nullptr: report slot indices
  const double* weight_cumsum;  // nullptr: uniform; else per-row inclusive
};

struct WalkParams {
  uint64_t rng_seed;
  int64_t walk_length;
  double inv_p, inv_q, max_alpha;  // 1/p, 1/q, max(1/p, 1, 1/q)
  bool second_order;               // p != 1 or q != 1
  double restart_prob;
};

template <typename index_t>
FS_HOST_DEVICE bool has_edge(const WalkGraph<index_t>& g, int64_t from,
                             int64_t to) {
  int64_t lo = g.rowptr[from], hi = g.rowptr[from + 1];
  const int64_t end = hi;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(g.col[mid]) < to) lo = mid + 1; else hi = mid;
  }
  return lo < end && static_cast<int64_t>(g.col[lo]) == to;
}

template <typename index_t>
FS_HOST_DEVICE double edge_weight(const WalkGraph<index_t>& g, int64_t begin,
                                  int64_t slot) {
  if (g.weight_cumsum == nullptr) return 1.0;
  return slot == begin ? g.weight_cumsum[slot]
                       : g.weight_cumsum[slot] - g.weight_cumsum[slot - 1];
}

// A slot of [begin, end) drawn from the first-order distribution.
template <typename index_t>
FS_HOST_DEVICE int64_t propose(const WalkGraph<index_t>& g, int64_t begin,
                               int64_t end, uint64_t bits) {
  if (g.weight_cumsum == nullptr)
    return begin + static_cast<int64_t>(
                       uniform_below(bits, static_cast<uint64_t>(end - begin)));
  const double* cum = g.weight_cumsum + begin;
  return begin + first_above([cum](int64_t j) { return cum[j]; }, end - begin,
                             FS_MUL(unit_uniform(bits), cum[end - begin - 1]));
}

template <typename index_t>
FS_HOST_DEVICE double alpha(const WalkGraph<index_t>& g, const WalkParams& w,
                            int64_t prev, int64_t x) {
  if (x == prev) return w.inv_p;
  return has_edge(g, prev, x) ? 1.0 : w.inv_q;
}

// The exact second-order draw: mass w_e * alpha(prev, col[e]) per slot.
template <typename index_t>
FS_HOST_DEVICE int64_t exact_second_order(const WalkGraph<index_t>& g,
                                          const WalkParams& w, int64_t begin,
                                          int64_t end, int64_t prev,
                                          uint64_t bits) {
  double mass = 0.0;
  for (int64_t e = begin; e < end; ++e)
    mass += FS_MUL(edge_weight(g, begin, e), alpha(g, w, prev, g.col[e]));
  const double target = FS_MUL(unit_uniform(bits), mass);
  double acc = 0.0;
  int64_t last = begin;
  for (int64_t e = begin; e < end; ++e) {
    const double m = FS_MUL(edge_weight(g, begin, e), alpha(g, w, prev, g.col[e]));
    if (m <= 0.0) continue;
    acc += m;
    last = e;
    if (acc > target) return e;
  }
  return last;  // rounding left target at the very top: the last live slot
}

// The slot walk `walk` takes at `step` from v (prev < 0: a first-order
// step), or -1 when v is a sink.
template <typename index_t>
FS_HOST_DEVICE int64_t step_slot(const WalkGraph<index_t>& g,
                                 const WalkParams& w, int64_t walk,
                                 int64_t step, int64_t v, int64_t prev) {
  const int64_t begin = g.rowptr[v], end = g.rowptr[v + 1];
  if (begin == end) return -1;
  if (g.weight_cumsum != nullptr && !(g.weight_cumsum[end - 1] > 0.0))
    return -1;
  const uint64_t s = w.rng_seed, i = static_cast<uint64_t>(walk),
                 t = static_cast<uint64_t>(step);
  if (!w.second_order || prev < 0) return propose(g, begin, end, random_bits(s, i, t, 0));
  for (int trial = 0; trial < kMaxTrials; ++trial) {
    const int64_t slot = propose(g, begin, end, random_bits(s, i, t, trial));
    const double a = alpha(g, w, prev, g.col[slot]);
    if (unit_uniform(random_bits(s, i, t, kAcceptDraw | trial)) * w.max_alpha < a)
      return slot;
  }
  return exact_second_order(g, w, begin, end, prev, random_bits(s, i, t, kExactDraw));
}

// Walk `walk` from `start`: writes walk_length + 1 nodes and, unless `edge`
// is null, walk_length edge ids, `stride` elements apart (1: the walk's row;
// the number of walks: its column of a step-major buffer).
template <typename index_t>
FS_HOST_DEVICE void walk_one(const WalkGraph<index_t>& g, const WalkParams& w,
                             int64_t walk, int64_t start, int64_t* node,
                             int64_t* edge, int64_t stride = 1) {
  int64_t v = start, prev = -1;
  node[0] = v;
  for (int64_t step = 0; step < w.walk_length; ++step) {
    int64_t slot = -1;
    const bool restart =
        w.restart_prob > 0.0 &&
        unit_uniform(random_bits(w.rng_seed, static_cast<uint64_t>(walk),
                                 static_cast<uint64_t>(step), kRestartDraw)) <
            w.restart_prob;
    if (restart) {
      prev = -1;
      v = start;
    } else {
      slot = step_slot(g, w, walk, step, v, prev);
      prev = slot < 0 ? -1 : v;
      if (slot >= 0) v = static_cast<int64_t>(g.col[slot]);
    }
    node[(step + 1) * stride] = v;
    if (edge != nullptr)
      edge[step * stride] =
          slot < 0 ? -1 : (g.edge_id != nullptr ? g.edge_id[slot] : slot);
  }
}

// A node's share in a multi-root walk's choice of who moves: its out-degree
// (uniform walks) or its total out-weight (weighted walks).
template <typename index_t>
FS_HOST_DEVICE double frontier_mass(const WalkGraph<index_t>& g, int64_t v) {
  const int64_t begin = g.rowptr[v], end = g.rowptr[v + 1];
  if (begin == end) return 0.0;
  return g.weight_cumsum == nullptr ? static_cast<double>(end - begin)
                                    : g.weight_cumsum[end - 1];
}

// Multi-root walk `walk` (NextDoor's MultiRW; Ribeiro and Towsley's frontier
// sampling): the walk keeps R current nodes, initially its roots; a step
// picks one of them with probability proportional to frontier_mass and moves
// it along a first-order out-edge. Writes the R roots then walk_length
// visited nodes, and (unless `edge` is null) walk_length edge ids; a step at
// which every current node is a sink writes -1 for both. `frontier` is R
// words of scratch.
template <typename index_t>
FS_HOST_DEVICE void multi_root_walk_one(const WalkGraph<index_t>& g,
                                        const WalkParams& w, int64_t walk,
                                        const int64_t* roots, int64_t R,
                                        int64_t* frontier, int64_t* node,
                                        int64_t* edge) {
  for (int64_t r = 0; r < R; ++r) frontier[r] = node[r] = roots[r];
  const uint64_t i = static_cast<uint64_t>(walk);
  for (int64_t step = 0; step < w.walk_length; ++step) {
    const uint64_t t = static_cast<uint64_t>(step);
    double total = 0.0;
    for (int64_t r = 0; r < R; ++r) total = FS_ADD(total, frontier_mass(g, frontier[r]));
    if (!(total > 0.0)) {
      node[R + step] = -1;
      if (edge != nullptr) edge[step] = -1;
      continue;
    }
    const double target = FS_MUL(unit_uniform(random_bits(w.rng_seed, i, t, kFrontierDraw)), total);
    int64_t mover = -1;
    double acc = 0.0;
    for (int64_t r = 0; r < R && mover < 0; ++r) {
      const double m = frontier_mass(g, frontier[r]);
      if (m <= 0.0) continue;
      acc = FS_ADD(acc, m);
      if (acc > target) mover = r;
    }
    if (mover < 0) {  // rounding left target at the top: the last live node
      for (int64_t r = R - 1; r >= 0 && mover < 0; --r)
        if (frontier_mass(g, frontier[r]) > 0.0) mover = r;
    }
    const int64_t v = frontier[mover];
    const int64_t slot = propose(g, g.rowptr[v], g.rowptr[v + 1], random_bits(w.rng_seed, i, t, 0));
    frontier[mover] = static_cast<int64_t>(g.col[slot]);
    node[R + step] = frontier[mover];
    if (edge != nullptr) edge[step] = g.edge_id != nullptr ? g.edge_id[slot] : slot;
  }
}

}  // namespace walk
}  // namespace fusesample
