// Reading Kubernetes objects as JSON without a chain of checks: Field()
// follows a path and answers null for anything missing or of the wrong
// shape; the typed readers answer a default. ParseTime reads an RFC 3339
// timestamp as the API server writes it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace pilotlight {

inline const nlohmann::json& Field(const nlohmann::json& obj,
                                   std::initializer_list<const char*> path) {
  static const nlohmann::json kNull;
  const nlohmann::json* cur = &obj;
  for (const char* p : path) {
    if (!cur->is_object()) {
      return kNull;
    }
    auto it = cur->find(p);
    if (it == cur->end()) {
      return kNull;
    }
    cur = &*it;
  }
  return *cur;
}

inline std::string StringField(const nlohmann::json& obj,
                               std::initializer_list<const char*> path) {
  const nlohmann::json& v = Field(obj, path);
  return v.is_string() ? v.get<std::string>() : std::string();
}

inline int64_t IntField(const nlohmann::json& obj,
                        std::initializer_list<const char*> path) {
  const nlohmann::json& v = Field(obj, path);
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

inline double DoubleField(const nlohmann::json& obj,
                          std::initializer_list<const char*> path,
                          double fallback = 0) {
  const nlohmann::json& v = Field(obj, path);
  return v.is_number() ? v.get<double>() : fallback;
}

inline bool BoolField(const nlohmann::json& obj,
                      std::initializer_list<const char*> path) {
  const nlohmann::json& v = Field(obj, path);
  return v.is_boolean() && v.get<bool>();
}

// The elements of an array field; an empty array when it is not one.
inline const nlohmann::json& ArrayField(
    const nlohmann::json& obj, std::initializer_list<const char*> path) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json& v = Field(obj, path);
  return v.is_array() ? v : kEmpty;
}

inline std::optional<absl::Time> ParseTime(const nlohmann::json& v) {
  if (!v.is_string()) {
    return std::nullopt;
  }
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, v.get<std::string>(), &t, &err)) {
    return std::nullopt;
  }
  return t;
}

// As the API server writes times: RFC 3339, seconds, UTC.
inline std::string FormatRfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace pilotlight
