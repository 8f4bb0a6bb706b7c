// fusesample::copy_blocks / copy_row_blocks -- many tensor pairs (or blocks
// of their rows) copied in one launch: the per-step copies of a batch into a padded batch's fixed buffers
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
//
// copy_row_blocks(dst, src, blocks) -> ():
//   blocks of rows of tensor pairs, without a view per block: a padded
//   batch's copies are a block per hop and attribute, and making each a
//   Python view cost more host time than the copies take on the GPU.
//   dst, src: lists of equal length (the dispatcher finds the device in
//   them); dst[i] and src[i] have the same dtype and row width (the
//   elements of one index of the first dimension; a 0-d tensor is one row
//   of one element), are contiguous and on one device (CPU or CUDA).
//   blocks: (i, dst_row, src_row, rows) quadruples, flat: rows
//   src_row:src_row + rows of src[i] are copied into rows
//   dst_row:dst_row + rows of dst[i]; each range inside its tensor,
//   rows >= 0. Blocks must not overlap (as above). Any other input raises
//   before anything is written. CUDA: as copy_blocks (one launch per
//   kCopyBlocks blocks).
#include "copy_blocks_common.h"

#include <torch/library.h>

namespace fusesample {
namespace {

void check_pairs(const char* op, at::TensorList dst, at::TensorList src) {
  TORCH_CHECK(dst.size() == src.size(), op, ": 'dst' and 'src' must be lists of the same "
              "length, got ", dst.size(), " and ", src.size());
  for (size_t i = 0; i < dst.size(); ++i) {
    TORCH_CHECK(dst[i].scalar_type() == src[i].scalar_type(), op, ": dst[", i, "] is ",
                dst[i].scalar_type(), " but src[", i, "] is ", src[i].scalar_type());
    TORCH_CHECK(dst[i].is_contiguous() && src[i].is_contiguous(), op, ": dst[", i,
                "] and src[", i, "] must be contiguous");
    TORCH_CHECK(dst[i].device() == src[i].device() && dst[i].device() == dst[0].device(), op,
                ": every tensor must be on one device; dst[", i, "] is on ", dst[i].device(),
                ", src[", i, "] on ", src[i].device(), ", dst[0] on ", dst[0].device());
  }
}

// rows (the first dimension; a 0-d tensor: one) and bytes per row
int64_t rows_of(const at::Tensor& t) { return t.dim() == 0 ? 1 : t.size(0); }

int64_t row_bytes(const at::Tensor& t) {
  int64_t n = static_cast<int64_t>(t.element_size());
  for (int64_t d = 1; d < t.dim(); ++d) n *= t.size(d);
  return n;
}

}  // namespace

std::vector<ByteBlock> checked_copy_blocks(const char* op, at::TensorList dst,
                                           at::TensorList src) {
  check_pairs(op, dst, src);
  std::vector<ByteBlock> out;
  for (size_t i = 0; i < dst.size(); ++i) {
    TORCH_CHECK(dst[i].numel() == src[i].numel(), op, ": dst[", i, "] has ", dst[i].numel(),
                " elements but src[", i, "] has ", src[i].numel());
    if (dst[i].numel() > 0)
      out.push_back({dst[i].data_ptr(), src[i].data_ptr(),
                     static_cast<int64_t>(dst[i].nbytes())});
  }
  return out;
}

std::vector<ByteBlock> checked_copy_row_blocks(const char* op, at::TensorList dst,
                                               at::TensorList src, at::IntArrayRef blocks) {
  check_pairs(op, dst, src);
  for (size_t i = 0; i < dst.size(); ++i)
    TORCH_CHECK(row_bytes(dst[i]) == row_bytes(src[i]), op, ": dst[", i, "] ",
                dst[i].sizes(), " and src[", i, "] ", src[i].sizes(),
                " must have rows of one width");
  TORCH_CHECK(blocks.size() % 4 == 0, op, ": 'blocks' must be (i, dst_row, src_row, rows) "
              "quadruples, got ", blocks.size(), " values");
  const auto n = static_cast<int64_t>(dst.size());
  std::vector<ByteBlock> out;
  for (size_t b = 0; b < blocks.size(); b += 4) {
    const int64_t i = blocks[b], d = blocks[b + 1], s = blocks[b + 2], rows = blocks[b + 3];
    TORCH_CHECK(i >= 0 && i < n, op, ": block ", b / 4, " names pair ", i, " of ", n);
    TORCH_CHECK(rows >= 0 && d >= 0 && s >= 0 && d <= rows_of(dst[i]) - rows &&
                    s <= rows_of(src[i]) - rows,
                op, ": block ", b / 4, " (rows ", s, ":", s + rows, " of src[", i, "] to rows ",
                d, ":", d + rows, " of dst[", i, "]) must lie in src's ", rows_of(src[i]),
                " and dst's ", rows_of(dst[i]), " rows");
    const int64_t w = row_bytes(dst[i]);
    if (rows > 0 && w > 0)
      out.push_back({static_cast<char*>(dst[i].data_ptr()) + d * w,
                     static_cast<const char*>(src[i].data_ptr()) + s * w, rows * w});
  }
  return out;
}

}  // namespace fusesample

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("copy_blocks(Tensor(a!)[] dst, Tensor[] src) -> ()");
  m.def("copy_row_blocks(Tensor(a!)[] dst, Tensor[] src, int[] blocks) -> ()");
}
