// PL_ASSIGN_OR_RETURN / PL_RETURN_IF_ERROR: early return on a non-OK
// absl::Status(Or), as in Abseil-style codebases. base/ is the bottom of the
// dependency graph (no domain code), so every layer can include this.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define PL_STATUS_CONCAT_INNER(a, b) a##b
#define PL_STATUS_CONCAT(a, b) PL_STATUS_CONCAT_INNER(a, b)

#define PL_RETURN_IF_ERROR(expr)                              \
  do {                                                        \
    if (absl::Status pl_status_ = (expr); !pl_status_.ok()) { \
      return pl_status_;                                      \
    }                                                         \
  } while (0)

#define PL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) {                               \
    return tmp.status();                         \
  }                                              \
  lhs = *std::move(tmp)  // NOLINT(bugprone-macro-parentheses)

#define PL_ASSIGN_OR_RETURN(lhs, expr) \
  PL_ASSIGN_OR_RETURN_IMPL(PL_STATUS_CONCAT(pl_statusor_, __LINE__), lhs, expr)
