// Counts the floating-point operations of the ATen operators a thread runs,
// so a model whose work depends on its data is counted from what it did.
//
// Convention (docs/design.md "Valid FLOPS, levels and the FLOP convention"):
// convolutions and matrix products only, a multiply-add counting 2, bias
// additions not counted. Observed operators:
// aten::conv{1,2,3}d, conv_transpose{1,2,3}d, convolution, _convolution,
// linear, matmul, mm, addmm, bmm, baddbmm, mv, addmv, dot. Only the outermost
// observed operator of a call counts (aten::linear counts, the aten::addmm it
// calls does not), so each product is counted once whatever path LibTorch
// takes. Operators inside a backward function never count. Every other
// top-level operator is tallied apart, as `other_ops` and the elements they
// produce.
//
// Thread-safety: a FlopCounter observes only the thread that made it and must
// be used and destroyed there; at most one is alive per thread.
#ifndef HPCAI500_WORKER_METRICS_FLOPS_H_
#define HPCAI500_WORKER_METRICS_FLOPS_H_

#include <ATen/record_function.h>

#include <cstdint>

namespace hpcai500::worker {

// What a FlopCounter saw; summable over batches.
struct FlopCount {
  // Convolutions and matrix products, multiply-add = 2.
  double flops = 0;
  // Top-level operators that are not convolutions or matrix products
  // (BatchNorm, ReLU, pooling, additions, views, ...).
  int64_t other_ops = 0;
  // Elements of the tensors those operators returned.
  double other_elements = 0;

  FlopCount& operator+=(const FlopCount& other) {
    flops += other.flops;
    other_ops += other.other_ops;
    other_elements += other.other_elements;
    return *this;
  }
};

// Counts, from construction until Stop() or destruction, the operators this
// thread runs (through an at::RecordFunction thread-local callback). Wrap a
// model's forward pass only: the methodology takes training as 3 x forward.
class FlopCounter {
 public:
  // Starts counting. Throws c10::Error if another FlopCounter is counting on
  // this thread.
  FlopCounter();
  ~FlopCounter();
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  // Stops counting (later calls do nothing) and returns the count.
  const FlopCount& Stop();
  // The count so far.
  const FlopCount& count() const { return count_; }

 private:
  at::CallbackHandle handle_ = at::INVALID_CALLBACK_HANDLE;
  FlopCount count_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_METRICS_FLOPS_H_
