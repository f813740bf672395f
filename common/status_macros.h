// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status and absl::StatusOr.
#ifndef HPCAI500_COMMON_STATUS_MACROS_H_
#define HPCAI500_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HPCAI500_CONCAT_INNER_(a, b) a##b
#define HPCAI500_CONCAT_(a, b) HPCAI500_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when it is not OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::absl::Status hpcai500_status_ = (expr);            \
    if (!hpcai500_status_.ok()) return hpcai500_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, Foo());` declares x from an OK StatusOr, or
// returns its status.
#define ASSIGN_OR_RETURN(lhs, expr)                                           \
  ASSIGN_OR_RETURN_IMPL_(HPCAI500_CONCAT_(hpcai500_statusor_, __LINE__), lhs, \
                         expr)
#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                           \
  if (!statusor.ok()) return statusor.status();     \
  lhs = std::move(statusor).value()

#endif  // HPCAI500_COMMON_STATUS_MACROS_H_
