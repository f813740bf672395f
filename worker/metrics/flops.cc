#include "worker/metrics/flops.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <vector>

namespace hpcai500::worker {

namespace {

// How an observed operator's multiply-adds follow from its arguments.
enum class Rule {
  // Weight [Cout, Cin/groups, k...] at input 1: each output element is one
  // dot product of weight.numel() / Cout terms.
  kConvolution,
  // Weight [Cin, Cout/groups, k...] at input 1: each input element is
  // multiplied into weight.numel() / Cin outputs.
  kTransposedConvolution,
  // aten::convolution / aten::_convolution: input 6 says which of the two.
  kGenericConvolution,
  // Each output element is a dot product over the last dimension of input 0.
  kProductOfInput0,
  // The same, of input 1 (input 0 is the added term: addmm, baddbmm, addmv).
  kProductOfInput1,
};

struct ObservedOp {
  const char* name;
  Rule rule;
};

constexpr ObservedOp kObserved[] = {
    {"aten::conv1d", Rule::kConvolution},
    {"aten::conv2d", Rule::kConvolution},
    {"aten::conv3d", Rule::kConvolution},
    {"aten::conv_transpose1d", Rule::kTransposedConvolution},
    {"aten::conv_transpose2d", Rule::kTransposedConvolution},
    {"aten::conv_transpose3d", Rule::kTransposedConvolution},
    {"aten::convolution", Rule::kGenericConvolution},
    {"aten::_convolution", Rule::kGenericConvolution},
    {"aten::linear", Rule::kProductOfInput0},
    {"aten::matmul", Rule::kProductOfInput0},
    {"aten::mm", Rule::kProductOfInput0},
    {"aten::bmm", Rule::kProductOfInput0},
    {"aten::mv", Rule::kProductOfInput0},
    {"aten::dot", Rule::kProductOfInput0},
    {"aten::addmm", Rule::kProductOfInput1},
    {"aten::baddbmm", Rule::kProductOfInput1},
    {"aten::addmv", Rule::kProductOfInput1},
};

const ObservedOp* FindObserved(const char* name) {
  if (name == nullptr || std::strncmp(name, "aten::", 6) != 0) return nullptr;
  for (const ObservedOp& op : kObserved) {
    if (std::strcmp(name, op.name) == 0) return &op;
  }
  return nullptr;
}

// One operator in progress on this thread while a counter is alive.
struct Frame {
  enum class Role { kCounted, kOther, kInner, kBackward } role = Role::kInner;
  // kCounted: multiply-adds per output element, plus a fixed part known
  // from the inputs alone (transposed convolutions).
  double macs_per_output = 0;
  double fixed_macs = 0;
};

struct ThreadState {
  FlopCount* count = nullptr;  // null: no counter on this thread
  std::vector<Frame> frames;
  int counted_depth = 0;   // kCounted frames open
  int backward_depth = 0;  // kBackward frames open
};

thread_local ThreadState state;

const at::Tensor* TensorAt(c10::ArrayRef<const c10::IValue> inputs, size_t i) {
  if (i >= inputs.size() || !inputs[i].isTensor()) return nullptr;
  const at::Tensor& t = inputs[i].toTensor();
  return t.defined() ? &t : nullptr;
}

// Terms per dot product of a convolution weight: numel / size(0).
double TermsPerWeightRow(const at::Tensor* weight) {
  if (weight == nullptr || weight->dim() < 2 || weight->size(0) == 0) return 0;
  return static_cast<double>(weight->numel() / weight->size(0));
}

double LastDim(const at::Tensor* t) {
  if (t == nullptr || t->dim() == 0) return 0;
  return static_cast<double>(t->size(-1));
}

void StartCounted(const ObservedOp& op, c10::ArrayRef<const c10::IValue> in,
                  Frame& frame) {
  Rule rule = op.rule;
  if (rule == Rule::kGenericConvolution) {
    const bool transposed = in.size() > 6 && in[6].isBool() && in[6].toBool();
    rule = transposed ? Rule::kTransposedConvolution : Rule::kConvolution;
  }
  switch (rule) {
    case Rule::kConvolution:
      frame.macs_per_output = TermsPerWeightRow(TensorAt(in, 1));
      break;
    case Rule::kTransposedConvolution: {
      const at::Tensor* input = TensorAt(in, 0);
      frame.fixed_macs = input == nullptr
                             ? 0
                             : static_cast<double>(input->numel()) *
                                   TermsPerWeightRow(TensorAt(in, 1));
      break;
    }
    case Rule::kProductOfInput0:
      frame.macs_per_output = LastDim(TensorAt(in, 0));
      break;
    case Rule::kProductOfInput1:
      frame.macs_per_output = LastDim(TensorAt(in, 1));
      break;
    case Rule::kGenericConvolution:
      break;  // resolved above
  }
}

double OutputElements(const at::RecordFunction& fn, bool first_only) {
  double elements = 0;
  for (const c10::IValue& out : fn.outputs()) {
    if (out.isTensor() && out.toTensor().defined()) {
      elements += static_cast<double>(out.toTensor().numel());
      if (first_only) break;
    }
  }
  return elements;
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  ThreadState& s = state;
  if (s.count == nullptr) return nullptr;
  Frame frame;
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    frame.role = Frame::Role::kBackward;
    ++s.backward_depth;
  } else if (s.backward_depth == 0) {
    const ObservedOp* op = FindObserved(fn.name());
    if (op != nullptr && s.counted_depth == 0) {
      frame.role = Frame::Role::kCounted;
      StartCounted(*op, fn.inputs(), frame);
      ++s.counted_depth;
    } else if (op == nullptr && s.frames.empty()) {
      frame.role = Frame::Role::kOther;
    }
  }
  s.frames.push_back(frame);
  return nullptr;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext* /*context*/) {
  ThreadState& s = state;
  // Callbacks travel with LibTorch's thread-local state to threads that have
  // no counter; and a frame list emptied by Stop() has nothing to close.
  if (s.count == nullptr || s.frames.empty()) return;
  const Frame frame = s.frames.back();
  s.frames.pop_back();
  switch (frame.role) {
    case Frame::Role::kCounted:
      --s.counted_depth;
      s.count->flops += 2.0 * (frame.fixed_macs +
                               frame.macs_per_output *
                                   OutputElements(fn, /*first_only=*/true));
      break;
    case Frame::Role::kOther:
      ++s.count->other_ops;
      s.count->other_elements += OutputElements(fn, /*first_only=*/false);
      break;
    case Frame::Role::kBackward:
      --s.backward_depth;
      break;
    case Frame::Role::kInner:
      break;
  }
}

}  // namespace

FlopCounter::FlopCounter() {
  TORCH_CHECK(state.count == nullptr,
              "FlopCounter: another counter is already counting on this "
              "thread");
  state = ThreadState{};
  state.count = &count_;
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(OnStart, OnEnd)
          .needsInputs(true)
          .needsOutputs(true)
          .scopes(
              {at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

FlopCounter::~FlopCounter() { Stop(); }

const FlopCount& FlopCounter::Stop() {
  if (handle_ != at::INVALID_CALLBACK_HANDLE) {
    at::removeCallback(handle_);
    handle_ = at::INVALID_CALLBACK_HANDLE;
    state = ThreadState{};
  }
  return count_;
}

}  // namespace hpcai500::worker
