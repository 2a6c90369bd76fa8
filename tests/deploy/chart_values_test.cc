// The chart's values, described once: values.schema.json (types,
// descriptions, defaults; helm refuses keys it does not list), values.yaml
// (the defaults helm uses) and the reference table in
// charts/pilotlight/README.md must say the same thing. Label unit: no helm
// needed (tests/deploy/chart_test.cc runs helm itself).
//
// The table is generated from the schema: PILOTLIGHT_REGENERATE=1 rewrites
// it in the README instead of failing (testutil::ExpectGenerated).
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/files.h"
#include "tests/yaml_json.h"

namespace pilotlight {
namespace {

using json = nlohmann::json;

constexpr char kChart[] = "charts/pilotlight";
constexpr char kBegin[] =
    "<!-- values:begin (generated from values.schema.json) -->\n";
constexpr char kEnd[] = "<!-- values:end -->\n";

json Schema() {
  return json::parse(
      testutil::ReadFile(absl::StrCat(kChart, "/values.schema.json")));
}

// A schema node is a leaf when it declares no properties of its own: plain
// values, and Kubernetes objects (resources, affinity, ...) passed through.
bool IsLeaf(const json& node) { return !node.contains("properties"); }

std::string Description(const json& node) {
  return node.contains("description")
             ? node.at("description").get<std::string>()
             : std::string();
}

// The defaults object the schema describes, built from its leaves.
json SchemaDefaults(const json& node) {
  if (IsLeaf(node)) {
    return node.contains("default") ? node.at("default") : json();
  }
  json out = json::object();
  for (const auto& [name, sub] : node.at("properties").items()) {
    out[name] = SchemaDefaults(sub);
  }
  return out;
}

void CheckDescribed(const json& node, const std::string& path) {
  if (!path.empty()) {
    EXPECT_FALSE(Description(node).empty()) << path << ": no description";
  }
  if (IsLeaf(node)) {
    EXPECT_TRUE(node.contains("default")) << path << ": no default";
    return;
  }
  EXPECT_TRUE(node.contains("additionalProperties") &&
              node.at("additionalProperties") == json(false))
      << (path.empty() ? "(root)" : path)
      << ": unknown keys must be refused (additionalProperties: false)";
  for (const auto& [name, sub] : node.at("properties").items()) {
    CheckDescribed(sub, path.empty() ? name : absl::StrCat(path, ".", name));
  }
}

std::string TypeOf(const json& node) {
  if (!node.contains("type")) {
    return "any";
  }
  if (node.at("type").is_array()) {
    std::string t;
    for (const json& x : node.at("type")) {
      absl::StrAppend(&t, t.empty() ? "" : " or ", x.get<std::string>());
    }
    return t;
  }
  std::string t = node.at("type").get<std::string>();
  if (node.contains("pattern") && node.at("pattern").get<std::string>().find(
                                      "ms|s|m|h") != std::string::npos) {
    t = "duration";
  }
  if (node.contains("enum")) {
    std::string e;
    for (const json& x : node.at("enum")) {
      absl::StrAppend(&e, e.empty() ? "" : ", ", x.get<std::string>());
    }
    t = absl::StrCat(t, " (", e, ")");
  }
  return t;
}

void Rows(const json& node, const std::string& path, std::string& out) {
  if (IsLeaf(node)) {
    absl::StrAppend(
        &out, "| `", path, "` | ", TypeOf(node), " | `",
        node.at("default").dump(), "` | ",
        absl::StrReplaceAll(Description(node), {{"|", "\\|"}, {"\n", " "}}),
        " |\n");
    return;
  }
  for (const auto& [name, sub] : node.at("properties").items()) {
    Rows(sub, path.empty() ? name : absl::StrCat(path, ".", name), out);
  }
}

std::string Table(const json& schema) {
  std::string out =
      "| Key | Type | Default | Description |\n|---|---|---|---|\n";
  Rows(schema, "", out);
  return out;
}

TEST(ChartValuesTest, EveryKeyIsDescribedTypedAndClosed) {
  CheckDescribed(Schema(), "");
}

TEST(ChartValuesTest, ValuesYamlIsTheSchemasDefaults) {
  const json values = testutil::YamlToJson(
      YAML::LoadFile(absl::StrCat(kChart, "/values.yaml")));
  const json defaults = SchemaDefaults(Schema());
  EXPECT_EQ(values, defaults) << "values.yaml:\n"
                              << values.dump(2) << "\nschema defaults:\n"
                              << defaults.dump(2);
}

TEST(ChartValuesTest, ReadmeTableIsGeneratedFromTheSchema) {
  const std::string path = absl::StrCat(kChart, "/README.md");
  const std::string readme = testutil::ReadFile(path);
  const size_t begin = readme.find(kBegin);
  const size_t end = readme.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << path << ": no " << kBegin;
  ASSERT_NE(end, std::string::npos) << path << ": no " << kEnd;
  const size_t from = begin + std::string(kBegin).size();
  testutil::ExpectGenerated(
      path, readme.substr(0, from) + Table(Schema()) + readme.substr(end),
      "the README with the schema's values table");
}

}  // namespace
}  // namespace pilotlight
