#include "controller/http/sleep_mode.h"

#include <algorithm>
#include <cstdint>

#include "nlohmann/json.hpp"

namespace pilotlight::http {

void SetClientTimeouts(httplib::Client& c, absl::Duration d) {
  const int64_t us = std::max<int64_t>(1000, absl::ToInt64Microseconds(d));
  c.set_connection_timeout(us / 1000000, us % 1000000);
  c.set_read_timeout(us / 1000000, us % 1000000);
  c.set_write_timeout(us / 1000000, us % 1000000);
}

std::optional<bool> IsSleeping(httplib::Client& c) {
  const httplib::Result r = c.Get("/is_sleeping");
  if (!r || r->status != 200) {
    return std::nullopt;
  }
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  if (!j.is_object() || !j.contains("is_sleeping") ||
      !j["is_sleeping"].is_boolean()) {
    return std::nullopt;
  }
  return j["is_sleeping"].get<bool>();
}

}  // namespace pilotlight::http
