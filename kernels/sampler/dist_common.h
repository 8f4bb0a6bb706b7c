// What the distributed sampler's ops (dist_hop.cpp, dist_sample_hops.cpp,
// dist_fetch_rows.cpp) share: ids grouped by their owner rank, the rows of
// owned ids and the refusal of the others, and one rank's all-to-alls over a
// torch.distributed process group called from C++, with the log the Python
// counters are kept from.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace fusesample {
namespace dist {

using Splits = std::vector<int64_t>;

inline int64_t total(const Splits& s) { return std::accumulate(s.begin(), s.end(), int64_t{0}); }

// ids [m] grouped by owner rank (owner_map [num_nodes]): a stable order of
// them (perm), ids per rank [world_size] and the owner of each in perm's
// order.
inline std::tuple<at::Tensor, at::Tensor, at::Tensor> by_owner(const at::Tensor& owner_map,
                                                               const at::Tensor& ids,
                                                               int64_t world_size) {
  const at::Tensor owner = owner_map.index_select(0, ids);
  // (above 4,096 ids sorted as the narrowest integers that hold a rank: a
  // GPU's radix sort takes a pass per 8 bits of key, 8 for int64; one H200,
  // .lab probe: 6.5k / 35k / 165k ids 105 / 133 / 95 us as int64, 65 / 68 /
  // 42 us as uint8 with the cast. Up to 4,096 ATen sorts in one block,
  // where the cast's launch costs more than it saves: 1,024 ids 50 vs 67 us)
  const at::ScalarType key = world_size <= 256     ? at::kByte
                             : world_size <= 32768 ? at::kShort
                                                   : at::kInt;
  const at::Tensor perm = std::get<1>(at::sort(ids.numel() > 4096 ? owner.to(key) : owner,
                                               /*stable=*/true, 0, /*descending=*/false));
  // (integers: exact in any order)
  const at::Tensor counts =
      at::zeros({world_size}, ids.options()).index_add_(0, owner, at::ones_like(owner));
  return {perm, counts, owner.index_select(0, perm)};
}

// Rows of `ids` in the owned `nodes` (ascending; in range whatever ids
// are), and whether any id is not owned here, on the device (the caller
// reads it before the rows are used).
inline std::tuple<at::Tensor, at::Tensor> local_rows(const at::Tensor& nodes,
                                                     const at::Tensor& ids) {
  const int64_t n = nodes.numel();
  if (n == 0) {
    return {at::zeros_like(ids),
            at::scalar_tensor(ids.numel() > 0, ids.options().dtype(at::kBool))};
  }
  at::Tensor local = at::searchsorted(nodes, ids).clamp_max_(n - 1);
  return {local, nodes.index_select(0, local).ne(ids).any()};
}

// A request for a node this rank does not own (the Python side matches
// this message).
inline void refuse_foreign(bool foreign, int64_t rank) {
  TORCH_CHECK(!foreign, "rank ", rank, " was asked for nodes it does not own");
}

// Host seconds spent in a call's parts (std::chrono, the host's clock):
// where an op's time on the host goes, reported with its results.
class HostClock {
 public:
  HostClock() : start_(now()) {}
  // f() run, its host time added to *acc; its result returned
  template <typename F>
  auto time(double* acc, F&& f) {
    struct Add {
      double* acc;
      double t0;
      ~Add() { *acc += HostClock::now() - t0; }
    } add{acc, now()};
    return f();
  }
  double since_start() const { return now() - start_; }
  static double now() {
    return std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  double start_;
};

// One rank's all-to-alls over a process group, with their log and the
// host's time in them and in its reads (HostClock).
class Exchanges {
 public:
  explicit Exchanges(const std::string& group)
      : pg_(c10d::resolve_process_group(group)),
        rank_(pg_->getRank()),
        world_(pg_->getSize()) {}

  int64_t rank() const { return rank_; }
  int64_t world() const { return world_; }
  int64_t host_reads() const { return host_reads_; }

  // A device-to-host copy (in `dtype`, else t's) whose time counts as a
  // read's (a wait for the device on a GPU); read() and a check's flag
  // (the latter not counted in host_reads).
  at::Tensor to_host(const at::Tensor& t, std::optional<at::ScalarType> dtype = std::nullopt) {
    return clock_.time(&read_s_, [&] { return t.to(at::kCPU, dtype.value_or(t.scalar_type())); });
  }

  // Host seconds of the op so far: [in reads (waits for the device, and
  // for the peers' exchanges before them), in the all-to-all calls (the
  // process group's host work), in `other` (a part the op timed itself),
  // the op in all].
  std::vector<double> host_seconds(double other = 0.0) const {
    return {read_s_, exchange_s_, other, clock_.since_start()};
  }

  HostClock& clock() { return clock_; }

  // rows (grouped by destination: out[r] for rank r) to their ranks; the
  // rows received, grouped by source (in[r] from rank r).
  at::Tensor send(const at::Tensor& rows, Splits out, Splits in) {
    std::vector<int64_t> shape = rows.sizes().vec();
    shape[0] = total(in);
    at::Tensor recv = at::empty(shape, rows.options());
    at::Tensor sent = rows.contiguous();
    int64_t row_bytes = rows.element_size();
    for (size_t d = 1; d < shape.size(); ++d) row_bytes *= shape[d];
    all_to_all(recv, sent, in, out);
    log_.push_back(row_bytes);
    log_.insert(log_.end(), out.begin(), out.end());
    log_.insert(log_.end(), in.begin(), in.end());
    return recv;
  }

  // counts[r]: the rows about to go to rank r. One exchange of the counts,
  // one host read: the rows to send and to come per rank (host), and the
  // latter on the device.
  std::tuple<Splits, Splits, at::Tensor> sizes(const at::Tensor& counts) {
    const Splits ones(world_, 1);
    at::Tensor recv = send(counts, ones, ones);
    Splits both = read(at::stack({counts, recv}));
    return {Splits(both.begin(), both.begin() + world_),
            Splits(both.begin() + world_, both.end()), recv};
  }

  // A host read (a wait for the device on a GPU).
  Splits read(const at::Tensor& t) {
    at::Tensor host = to_host(t, at::kLong).contiguous();
    ++host_reads_;
    const int64_t* p = host.data_ptr<int64_t>();
    return Splits(p, p + host.numel());
  }

  // (bytes a row, rows to each rank, rows from each) per exchange
  at::Tensor log() const {
    return at::tensor(log_, at::kLong).view({-1, 1 + 2 * world_});
  }

 private:
  void all_to_all(at::Tensor& recv, at::Tensor& sent, Splits& in, Splits& out) {
    // (alltoall_base: the name torch 2.11's ProcessGroup has; later ones
    // keep it as an alias of all_to_all_single)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    clock_.time(&exchange_s_, [&] { pg_->alltoall_base(recv, sent, in, out)->wait(); });
#pragma GCC diagnostic pop
  }

  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  int64_t rank_, world_;
  int64_t host_reads_ = 0;
  std::vector<int64_t> log_;
  HostClock clock_;
  double read_s_ = 0.0, exchange_s_ = 0.0;
};

}  // namespace dist
}  // namespace fusesample
