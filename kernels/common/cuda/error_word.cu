// The per-device error word (contract: ../error_word.cuh).
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>

#include <mutex>

#include "../error_word.cuh"

namespace fusesample {

constexpr int kMaxDevices = 64;

at::Tensor error_word(const at::Device& device, bool create) {
  static std::mutex mutex;
  static at::Tensor* words = new at::Tensor[kMaxDevices];  // never freed:
  // CUDA memory must not be released by static destructors at exit
  const int index = device.index() >= 0 ? device.index() : at::cuda::current_device();
  TORCH_CHECK(index < kMaxDevices, "fusesample: device index ", index, " >= ", kMaxDevices);
  std::lock_guard<std::mutex> lock(mutex);
  if (!words[index].defined() && create) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    C10_CUDA_CHECK(
        cudaStreamIsCapturing(at::cuda::getCurrentCUDAStream(index).stream(), &status));
    if (status == cudaStreamCaptureStatusNone)
      words[index] =
          at::zeros({2}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA, index));
  }
  return words[index];
}

}  // namespace fusesample
