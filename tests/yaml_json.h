// YAML (yaml-cpp) -> JSON (nlohmann) for the tests that read manifests,
// CRD schemas and chart values: quoted scalars stay strings, `true`/`false`
// become booleans and plain numbers numbers, as a YAML 1.2 core-schema
// reader (the API server's, helm's) does.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "nlohmann/json.hpp"

namespace pilotlight::testutil {

inline nlohmann::json YamlToJson(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : n) {
      o[kv.first.as<std::string>()] = YamlToJson(kv.second);
    }
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& e : n) {
      a.push_back(YamlToJson(e));
    }
    return a;
  }
  if (!n.IsScalar()) {
    return nullptr;
  }
  const std::string s = n.Scalar();
  if (n.Tag() == "!") {  // quoted: a string
    return s;
  }
  if (s == "true" || s == "false") {
    return s == "true";
  }
  nlohmann::json number = nlohmann::json::parse(s, nullptr, false);
  return number.is_number() ? number : nlohmann::json(s);
}

}  // namespace pilotlight::testutil
