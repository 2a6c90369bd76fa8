#include "controller/process/log.h"

#include <iostream>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace pilotlight::process {

void LogJson(absl::string_view level, absl::string_view msg,
             const nlohmann::json& fields) {
  static std::mutex mu;
  nlohmann::json line = {
      {"ts", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                              absl::UTCTimeZone())},
      {"level", level},
      {"msg", msg}};
  if (fields.is_object()) {
    line.update(fields);
  }
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::lock_guard<std::mutex> lock(mu);
  std::cerr << text << '\n';
}

}  // namespace pilotlight::process
