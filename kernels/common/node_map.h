// NodeMap: global node key -> local id, for the CPU samplers' dedup/relabel.
//
// Open addressing with linear probing over interleaved (key, value) slots so
// a probe touches one cache line; grows at load 1/2. Keys are >= 0 (a node id,
// or batch * num_nodes + node for disjoint sampling); -1 marks an empty slot.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "rng.h"

namespace fusesample {

class NodeMap {
 public:
  explicit NodeMap(int64_t expected) {
    uint64_t capacity = 16;
    while (capacity < static_cast<uint64_t>(expected) * 2) capacity <<= 1;
    slots_.assign(capacity, Slot{-1, -1});
    mask_ = capacity - 1;
  }

  // Returns (local id, true) if `key` was new and now maps to `value`, or
  // (existing local id, false).
  std::pair<int64_t, bool> insert(int64_t key, int64_t value) {
    if (static_cast<uint64_t>(size_ + 1) * 2 > slots_.size()) grow();
    for (uint64_t i = mix64(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) return {s.value, false};
      if (s.key == -1) {
        s = Slot{key, value};
        ++size_;
        return {value, true};
      }
    }
  }

  // Local id of `key`, or -1. Safe to call from many threads while no thread
  // inserts.
  int64_t find(int64_t key) const {
    for (uint64_t i = mix64(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return s.value;
      if (s.key == -1) return -1;
    }
  }

 private:
  struct Slot {
    int64_t key;
    int64_t value;
  };

  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, Slot{-1, -1});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : old)
      if (s.key != -1) insert(s.key, s.value);
  }

  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  int64_t size_ = 0;
};

}  // namespace fusesample
