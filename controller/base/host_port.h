// "host:port" flag values, split once for every server and client address.
#pragma once

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace pilotlight {

// Splits "host:port" (port 0..65535); InvalidArgument naming `flag`
// otherwise.
inline absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    const std::string& address, const std::string& flag) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", address, ": want host:port"));
  }
  return std::make_pair(address.substr(0, colon), port);
}

}  // namespace pilotlight
