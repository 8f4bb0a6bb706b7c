// fusesample::copy_blocks -- many same-sized tensor pairs copied in one
// launch: the per-step copies of a batch into a padded batch's fixed buffers
// (pyg_fusesample.sparse.padded_batch), a block per hop and attribute.
//
// A captured training step (nn.CapturedBatchStep) replays on fixed buffers,
// so every batch is first copied in: about a dozen blocks (x, y, ... per
// hop). One cudaMemcpyAsync each costs several microseconds of host time and
// a copy node each on the GPU; a synchronised arXiv-sized step is ~0.8 ms,
// of which the copies took ~0.1 ms. One kernel copies them all.
//
// copy_blocks(dst, src) -> ():
//   dst, src: lists of equal length, one pair at least (the dispatcher finds
//   the device in the tensors); dst[i] and src[i] have the same dtype
//   and element count, are contiguous and on one device (every pair on the
//   same one; CPU or CUDA). src[i]'s bytes are copied into dst[i]. Blocks
//   must not overlap (dst with dst or with src): the result is unspecified
//   where they do. Any other input raises before anything is written.
//   CUDA: one launch per kCopyBlocks pairs (their addresses travel by value
//   in the launch: no host-to-device copy, no sync), 16-byte moves where
//   every address and size allows, else 8, 4, 2 or 1.
#include "copy_blocks_common.h"

#include <torch/library.h>

namespace fusesample {

void check_copy_blocks(const char* op, at::TensorList dst, at::TensorList src) {
  TORCH_CHECK(dst.size() == src.size(), op, ": 'dst' and 'src' must be lists of the same "
              "length, got ", dst.size(), " and ", src.size());
  for (size_t i = 0; i < dst.size(); ++i) {
    TORCH_CHECK(dst[i].scalar_type() == src[i].scalar_type(), op, ": dst[", i, "] is ",
                dst[i].scalar_type(), " but src[", i, "] is ", src[i].scalar_type());
    TORCH_CHECK(dst[i].numel() == src[i].numel(), op, ": dst[", i, "] has ", dst[i].numel(),
                " elements but src[", i, "] has ", src[i].numel());
    TORCH_CHECK(dst[i].is_contiguous() && src[i].is_contiguous(), op, ": dst[", i,
                "] and src[", i, "] must be contiguous");
    TORCH_CHECK(dst[i].device() == src[i].device() && dst[i].device() == dst[0].device(), op,
                ": every tensor must be on one device; dst[", i, "] is on ", dst[i].device(),
                ", src[", i, "] on ", src[i].device(), ", dst[0] on ", dst[0].device());
  }
}

}  // namespace fusesample

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("copy_blocks(Tensor(a!)[] dst, Tensor[] src) -> ()");
}
