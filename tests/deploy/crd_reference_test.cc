// docs/crd-reference.md is generated from the CRDs' schemas
// (charts/pilotlight/files/crds): every field with its type, default,
// validation and description, and the CEL rules with their messages. The
// test fails when the two drift; PILOTLIGHT_REGENERATE=1 rewrites the doc.
// Label unit.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/files.h"
#include "tests/yaml_json.h"

namespace pilotlight {
namespace {

using json = nlohmann::json;

constexpr char kDoc[] = "docs/crd-reference.md";

std::string Cell(const std::string& s) {
  return absl::StrReplaceAll(s, {{"|", "\\|"}, {"\n", " "}});
}

std::string Str(const json& node, const char* key) {
  return node.contains(key) && node.at(key).is_string()
             ? node.at(key).get<std::string>()
             : std::string();
}

// Validation of one node, in words.
std::string Rules(const json& node) {
  std::vector<std::string> r;
  if (node.contains("enum")) {
    std::vector<std::string> values;
    for (const json& v : node.at("enum")) {
      values.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    }
    r.push_back(absl::StrCat("one of ", absl::StrJoin(values, ", ")));
  }
  const auto bound = [&](const char* key, const char* exclusive,
                         const char* incl, const char* excl) {
    if (node.contains(key)) {
      const bool x = node.contains(exclusive) && node.at(exclusive) == true;
      r.push_back(absl::StrCat(x ? excl : incl, " ", node.at(key).dump()));
    }
  };
  bound("minimum", "exclusiveMinimum", ">=", ">");
  bound("maximum", "exclusiveMaximum", "<=", "<");
  for (const auto& [key, words] :
       std::vector<std::pair<const char*, const char*>>{
           {"minLength", "length >="},
           {"maxLength", "length <="},
           {"minItems", "items >="},
           {"maxItems", "items <="}}) {
    if (node.contains(key)) {
      r.push_back(absl::StrCat(words, " ", node.at(key).dump()));
    }
  }
  if (node.contains("required")) {
    std::vector<std::string> req;
    for (const json& f : node.at("required")) {
      req.push_back(f.get<std::string>());
    }
    r.push_back(absl::StrCat("requires ", absl::StrJoin(req, ", ")));
  }
  if (node.contains("x-kubernetes-validations")) {
    for (const json& v : node.at("x-kubernetes-validations")) {
      r.push_back(absl::StrCat("rule: ", Str(v, "message").empty()
                                             ? Str(v, "rule")
                                             : Str(v, "message")));
    }
  }
  return absl::StrJoin(r, "; ");
}

void Rows(const json& node, const std::string& path, std::string& out) {
  std::string type = Str(node, "type");
  if (!Str(node, "format").empty()) {
    absl::StrAppend(&type, " (", Str(node, "format"), ")");
  }
  if (!path.empty()) {
    absl::StrAppend(&out, "| `", path, "` | ", type, " | ",
                    node.contains("default")
                        ? absl::StrCat("`", node.at("default").dump(), "`")
                        : "",
                    " | ", Cell(Rules(node)), " | ",
                    Cell(Str(node, "description")), " |\n");
  }
  if (node.contains("properties")) {
    for (const auto& [name, sub] : node.at("properties").items()) {
      Rows(sub, path.empty() ? name : absl::StrCat(path, ".", name), out);
    }
  }
  if (node.contains("items")) {
    Rows(node.at("items"), absl::StrCat(path, "[]"), out);
  }
}

std::string Reference() {
  std::string out =
      "# Custom resource reference\n\n"
      "Generated from the CRDs' schemas (charts/pilotlight/files/crds) by\n"
      "`tests/deploy/crd_reference_test.cc` (`PILOTLIGHT_REGENERATE=1`\n"
      "rewrites it; the test fails when it drifts). `kubectl explain`\n"
      "shows the same descriptions. Defaults are applied by the API server.\n";
  for (const char* file : {"pilotlight.dev_inferenceautoscalers.yaml",
                           "pilotlight.dev_gpuclasses.yaml"}) {
    const json crd = testutil::YamlToJson(
        YAML::LoadFile(absl::StrCat("charts/pilotlight/files/crds/", file)));
    const json& names = crd.at("spec").at("names");
    for (const json& version : crd.at("spec").at("versions")) {
      const json& schema = version.at("schema").at("openAPIV3Schema");
      absl::StrAppend(&out, "\n## ", names.at("kind").get<std::string>(), " (",
                      crd.at("spec").at("group").get<std::string>(), "/",
                      version.at("name").get<std::string>(), ", ",
                      crd.at("spec").at("scope").get<std::string>(), ")\n");
      for (const char* part : {"spec", "status"}) {
        if (!schema.at("properties").contains(part)) {
          continue;
        }
        const json& node = schema.at("properties").at(part);
        absl::StrAppend(&out, "\n### ", part, "\n\n");
        const std::string rules = Rules(node);
        if (!rules.empty()) {
          absl::StrAppend(&out, Cell(rules), "\n\n");
        }
        absl::StrAppend(&out,
                        "| Field | Type | Default | Validation | "
                        "Description |\n|---|---|---|---|---|\n");
        Rows(node, "", out);
      }
    }
  }
  return out;
}

TEST(CrdReferenceTest, DocIsGeneratedFromTheSchemas) {
  testutil::ExpectGenerated(kDoc, Reference(),
                            "generated from the CRDs' schemas");
}

}  // namespace
}  // namespace pilotlight
