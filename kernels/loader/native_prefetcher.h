// NativePrefetcher -- the thread, queue and stream machinery of the loaders'
// native prefetchers (fusesample.BatchPrefetcher, fusesample.
// LayerBatchPrefetcher, fusesample.ShadowBatchPrefetcher): one epoch of
// batches assembled on native threads that never take the GIL, handed to the
// consumer in batch order.
//
// Why native threads: a training step bound by the host's launch rate gets no
// faster from a Python helper thread, which takes turns with the training
// thread on the GIL (FusedNeighborLoader, call94/95: 1.22-1.28x the model-only
// floor; LADIES / FastGCN on two Python threads: 1.43-1.91x the step on
// pre-sampled batches). Ops are called through the dispatcher, and custom-class
// methods run without the GIL, so the training thread only pays for next()
// handing over ready tensors.
//
// Contract (for subclasses):
//   - produce(b) returns batch b's tensors; it runs on worker b % W (W =
//     `threads`), gradient mode off, on that worker's stream (CUDA), and may
//     throw: the error is raised by the next() that would have returned batch
//     b, the calls after it return [].
//   - The subclass calls start() at the end of its constructor (the workers
//     call produce() from then on) and close() first thing in its destructor
//     (the workers must not outlive the members produce() reads).
//   - Worker w makes batches w, w + W, w + 2W, ... and keeps at most `depth`
//     of them ready; next() takes them in turn, so in batch order.
// Streams (CUDA): each worker enqueues its work on a stream of its own, which
// starts after the work enqueued on the current stream before start() (the
// inputs' last writes), with the inputs recorded as used there; its reads of
// device values then wait only for its own work, not for the training steps.
// next() makes the current stream wait for the batch and records the batch's
// tensors as used there, so the caching allocator does not hand their memory
// out early.
#pragma once

#include <Python.h>  // first, as Python asks

#include <ATen/core/Tensor.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/custom_class.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace fusesample {

class NativePrefetcher : public torch::CustomClassHolder {
 public:
  ~NativePrefetcher() override { close(); }

  // The next batch's tensors, [] once the epoch is over or closed.
  std::vector<at::Tensor> next() {
    Item item;
    Worker* worker;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (workers_.empty()) return {};
      worker = workers_[taken_ % workers_.size()].get();
      worker->ready.wait(lock, [&] {
        return !worker->queue.empty() || worker->finished || stopped_;
      });
      if (worker->queue.empty()) return {};
      item = std::move(worker->queue.front());
      worker->queue.pop_front();
      ++taken_;
    }
    worker->room.notify_one();
    if (item.error) {
      close();
      std::rethrow_exception(item.error);
    }
    if (item.done) hand_over(item);
    return std::move(item.tensors);
  }

  // Stops the workers (an epoch left before its end); a batch being made is
  // finished first.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
      for (auto& w : workers_) w->queue.clear();
    }
    for (auto& w : workers_) {
      w->room.notify_all();
      w->ready.notify_all();
    }
    for (auto& w : workers_) join(w->thread);
  }

 protected:
  NativePrefetcher(int64_t num_batches, int64_t depth, int64_t threads)
      : num_batches_(num_batches),
        depth_(static_cast<size_t>(depth)),
        threads_(threads) {
    TORCH_CHECK(depth >= 1, "native prefetcher: 'depth' must be >= 1, got ", depth);
    TORCH_CHECK(threads >= 1, "native prefetcher: 'threads' must be >= 1, got ", threads);
  }

  virtual std::vector<at::Tensor> produce(int64_t b) = 0;

  // For prefetchers whose batch b takes seeds [b * batch_size, (b + 1) *
  // batch_size) with key keys[b]: batch_size > 0 and ceil or floor of
  // num_seeds / batch_size keys (drop_last is the caller's).
  static void check_seed_batches(const char* owner, int64_t num_seeds, size_t num_keys,
                                 int64_t batch_size) {
    TORCH_CHECK(batch_size > 0, owner, ": 'batch_size' must be positive, got ", batch_size);
    const int64_t covered = static_cast<int64_t>(num_keys) * batch_size;
    TORCH_CHECK(covered - num_seeds < batch_size && num_seeds - covered < batch_size, owner,
                ": ", num_keys, " keys for ", num_seeds, " seeds in batches of ", batch_size,
                " (expected ceil or floor of seeds / batch_size)");
  }

  // Starts the workers, on `device` (streams of their own on a GPU, which
  // wait for the current stream and keep `inputs` alive until their work is
  // done).
  void start(const c10::Device& device, const std::vector<at::Tensor>& inputs) {
    const int64_t count = std::max<int64_t>(1, std::min(threads_, num_batches_));
    for (int64_t w = 0; w < count; ++w) workers_.push_back(std::make_unique<Worker>());
    if (device.is_cuda()) {
      const c10::impl::VirtualGuardImpl impl(device.type());
      const c10::Stream current = impl.getStream(device);
      c10::Event begun(device.type());
      begun.record(current);
      for (auto& w : workers_) {
        w->stream = impl.getStreamFromGlobalPool(device);
        begun.block(*w->stream);
        for (const at::Tensor& t : inputs)
          if (t.defined() && t.device() == device) t.record_stream(*w->stream);
      }
    }
    for (int64_t w = 0; w < count; ++w) {
      Worker* worker = workers_[w].get();
      worker->thread = std::thread([this, worker, w, count] { run(*worker, w, count); });
    }
  }

 private:
  struct Item {
    std::vector<at::Tensor> tensors;
    std::optional<c10::Event> done;  // recorded after the batch's work (CUDA)
    std::exception_ptr error;
  };

  struct Worker {
    std::deque<Item> queue;
    std::condition_variable ready, room;  // a batch is ready / there is room
    std::optional<c10::Stream> stream;
    std::thread thread;
    bool finished = false;
  };

  void run(Worker& worker, int64_t first, int64_t stride) {
    std::optional<c10::StreamGuard> on_stream;
    if (worker.stream) on_stream.emplace(*worker.stream);
    c10::AutoGradMode no_grad(false);
    for (int64_t b = first; b < num_batches_; b += stride) {
      Item item;
      try {
        item.tensors = produce(b);
        if (worker.stream) {
          item.done.emplace(worker.stream->device_type());
          item.done->record(*worker.stream);
        }
      } catch (...) {
        item.error = std::current_exception();
      }
      const bool failed = item.error != nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        worker.room.wait(lock, [&] { return stopped_ || worker.queue.size() < depth_; });
        if (stopped_) break;
        worker.queue.push_back(std::move(item));
      }
      worker.ready.notify_one();
      if (failed) break;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      worker.finished = true;
    }
    worker.ready.notify_all();
  }

  // The consumer's stream waits for the batch, and the batch's memory is not
  // reused before that stream is done with it.
  static void hand_over(const Item& item) {
    const c10::Device device(item.done->device_type(), item.done->device_index());
    const c10::Stream consumer = c10::impl::VirtualGuardImpl(device.type()).getStream(device);
    item.done->block(consumer);
    for (const at::Tensor& t : item.tensors)
      if (t.device() == consumer.device()) t.record_stream(consumer);
  }

  // Waits for a worker to end. Python drops the prefetcher (and so runs the
  // destructor) holding the GIL, and a worker may need the GIL on its way
  // out: releasing the last C++ reference to a tensor whose Python object has
  // died takes it. Joining while holding it hung an abandoned epoch
  // (call128), so the wait lets it go.
  static void join(std::thread& thread) {
    if (!thread.joinable() || thread.get_id() == std::this_thread::get_id()) return;
    if (Py_IsInitialized() && PyGILState_Check()) {
      Py_BEGIN_ALLOW_THREADS
      thread.join();
      Py_END_ALLOW_THREADS
    } else {
      thread.join();
    }
  }

  const int64_t num_batches_;
  const size_t depth_;
  const int64_t threads_;
  std::vector<std::unique_ptr<Worker>> workers_;  // filled by start()
  std::mutex mutex_;
  int64_t taken_ = 0;
  bool stopped_ = false;
};

}  // namespace fusesample
