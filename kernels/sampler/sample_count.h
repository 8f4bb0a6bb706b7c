// How many in-edges a target contributes at a hop, and which of its in-edge
// segments a slot falls in. Shared by the CPU and CUDA samplers so both size
// and fill their outputs alike.
//
// Typed graphs (heterogeneous: T edge types): the CSC has T segments per
// node, segment v * T + t holding v's in-edges of edge type t, and a hop has
// T fan-outs k[t]. A target's slots are its segments' draws, segment after
// segment. A homogeneous graph is T = 1: one segment per node.
#pragma once

#include <cstdint>

#include "../common/rng.h"
#include "segment_rule.h"

namespace fusesample {

FS_HOST_DEVICE int64_t sample_count(int64_t d, int64_t k, bool replace) {
  if (k < 0) return d;                  // -1: all in-edges
  if (replace) return d > 0 ? k : 0;    // k draws, none from an isolated node
  return d < k ? d : k;                 // min(deg, k) distinct in-edges
}

// The slots of target v over its T segments at fan-outs k[0, T), each
// segment narrowed by the rule (segment_rule.h) for the target's root seed.
FS_HOST_DEVICE int64_t target_slots(const int64_t* colptr, int64_t v,
                                    int64_t num_types, const int64_t* k,
                                    bool replace, const SegmentRule& rule,
                                    int64_t root) {
  int64_t slots = 0;
  for (int64_t t = 0; t < num_types; ++t) {
    const SegmentRange r = rule_range(colptr, v * num_types + t, k[t], rule, root);
    slots += sample_count(r.degree, k[t], replace);
  }
  return slots;
}

// Where slot s of target v lies: its segment's type, first drawable in-edge
// and drawable degree, and the slot's index within the segment's draws.
struct SegmentSlot {
  int64_t type, start, degree, slot;
};

FS_HOST_DEVICE SegmentSlot segment_of(const int64_t* colptr, int64_t v,
                                      int64_t num_types, const int64_t* k,
                                      bool replace, const SegmentRule& rule,
                                      int64_t root, int64_t s) {
  int64_t t = 0;
  for (;; ++t) {  // s < target_slots(...), so some segment holds it
    const SegmentRange r = rule_range(colptr, v * num_types + t, k[t], rule, root);
    const int64_t c = sample_count(r.degree, k[t], replace);
    if (s < c || t + 1 == num_types) return SegmentSlot{t, r.start, r.degree, s};
    s -= c;
  }
}

// The RNG key's first field for segment `type` at `hop`: the hop itself when
// T = 1, so homogeneous draws are unchanged by the typed layout.
FS_HOST_DEVICE int64_t draw_key(int64_t hop, int64_t num_types, int64_t type) {
  return hop * num_types + type;
}

}  // namespace fusesample
