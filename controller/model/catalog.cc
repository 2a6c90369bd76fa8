#include "controller/model/catalog.h"

#include <cmath>
#include <exception>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/base/status_macros.h"
#include "controller/model/yaml_document.h"
#include "yaml-cpp/yaml.h"

namespace pilotlight::model {
namespace {

absl::Status OutOfRange(absl::string_view where, absl::string_view field,
                        double value, absl::string_view allowed) {
  return absl::InvalidArgumentError(absl::StrCat(
      where, ".", field, ": ", value, " is out of range (", allowed, ")"));
}

// Reads a required scalar of type T from `node[key]`, with a clear error.
template <typename T>
absl::StatusOr<T> Required(const YAML::Node& node, const char* key,
                           absl::string_view where) {
  const YAML::Node v = node[key];
  if (!v) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": missing field \"", key, "\""));
  }
  try {
    return v.as<T>();
  } catch (const YAML::Exception&) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".", key, ": \"", v.Scalar(), "\" is not a ",
                     std::is_same_v<T, bool>     ? "boolean"
                     : std::is_same_v<T, int>    ? "integer"
                     : std::is_same_v<T, double> ? "number"
                                                 : "string"));
  }
}

template <typename T>
absl::StatusOr<T> Optional(const YAML::Node& node, const char* key,
                           absl::string_view where, T fallback) {
  if (!node[key]) {
    return fallback;
  }
  return Required<T>(node, key, where);
}

absl::StatusOr<InterconnectKind> ParseInterconnect(absl::string_view s,
                                                   absl::string_view where) {
  if (s == "PCIe") {
    return InterconnectKind::kPcie;
  }
  if (s == "NVLink") {
    return InterconnectKind::kNvlink;
  }
  if (s == "InfinityFabric") {
    return InterconnectKind::kInfinityFabric;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ".interconnect.kind: \"", s,
                   "\" is not one of PCIe, NVLink, InfinityFabric"));
}

absl::StatusOr<GpuClass> ParseClass(const YAML::Node& n,
                                    const std::string& where_index) {
  GpuClass c;
  if (!n.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where_index, ": expected a mapping"));
  }
  PL_ASSIGN_OR_RETURN(c.name, Required<std::string>(n, "name", where_index));
  const std::string where = absl::StrCat(where_index, " (", c.name, ")");
  const YAML::Node gpu = n["gpu"];
  if (!gpu || !gpu.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": missing mapping \"gpu\""));
  }
  const std::string gw = absl::StrCat(where, ".gpu");
  PL_ASSIGN_OR_RETURN(c.gpu_model, Required<std::string>(gpu, "model", gw));
  PL_ASSIGN_OR_RETURN(c.vendor,
                      Optional<std::string>(gpu, "vendor", gw, "NVIDIA"));
  PL_ASSIGN_OR_RETURN(c.memory_gib, Required<double>(gpu, "memoryGiB", gw));
  PL_ASSIGN_OR_RETURN(c.bandwidth_gbps,
                      Required<double>(gpu, "bandwidthGBps", gw));
  PL_ASSIGN_OR_RETURN(c.fp16_tflops, Required<double>(gpu, "fp16TFLOPS", gw));
  PL_ASSIGN_OR_RETURN(c.bf16, Optional<bool>(gpu, "bf16", gw, true));
  PL_ASSIGN_OR_RETURN(c.fp8_tflops,
                      Optional<double>(gpu, "fp8TFLOPS", gw, 0.0));
  PL_ASSIGN_OR_RETURN(c.int8_tops, Optional<double>(gpu, "int8TOPS", gw, 0.0));
  PL_ASSIGN_OR_RETURN(c.fp4_tflops,
                      Optional<double>(gpu, "fp4TFLOPS", gw, 0.0));

  const YAML::Node ic = n["interconnect"];
  if (ic && ic.IsMap()) {
    const std::string iw = absl::StrCat(where, ".interconnect");
    std::string kind;
    PL_ASSIGN_OR_RETURN(kind, Required<std::string>(ic, "kind", iw));
    PL_ASSIGN_OR_RETURN(c.interconnect, ParseInterconnect(kind, where));
    PL_ASSIGN_OR_RETURN(c.interconnect_gbps, Required<double>(ic, "GBps", iw));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": missing mapping \"interconnect\""));
  }
  PL_ASSIGN_OR_RETURN(c.host_link_gbps,
                      Required<double>(n, "hostLinkGBps", where));
  PL_ASSIGN_OR_RETURN(c.max_gpus_per_node,
                      Optional<int>(n, "maxGPUsPerNode", where, 8));
  PL_ASSIGN_OR_RETURN(c.host_memory_gib_per_gpu,
                      Optional<double>(n, "hostMemoryGiBPerGPU", where, 0.0));

  const YAML::Node price = n["pricePerGPUHour"];
  if (!price || !price.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": missing mapping \"pricePerGPUHour\""));
  }
  const std::string pw = absl::StrCat(where, ".pricePerGPUHour");
  PL_ASSIGN_OR_RETURN(c.price_on_demand_per_gpu_hour,
                      Required<double>(price, "onDemand", pw));
  PL_ASSIGN_OR_RETURN(c.price_spot_per_gpu_hour,
                      Optional<double>(price, "spot", pw, 0.0));

  const YAML::Node labels = n["nodeLabels"];
  if (labels) {
    if (!labels.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".nodeLabels: expected a mapping"));
    }
    for (const auto& kv : labels) {
      c.node_labels[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
  }
  PL_ASSIGN_OR_RETURN(c.source, Optional<std::string>(n, "source", where, ""));
  PL_ASSIGN_OR_RETURN(c.cloud, Optional<std::string>(n, "cloud", where, ""));
  return c;
}

absl::Status ValidateCatalog(const std::vector<GpuClass>& classes,
                             absl::string_view origin) {
  if (classes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": catalog has no classes"));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < classes.size(); ++i) {
    const GpuClass& c = classes[i];
    const std::string where =
        absl::StrCat(origin, ": classes[", i, "] (", c.name, ")");
    if (absl::Status s = ValidateGpuClass(c, where); !s.ok()) {
      return s;
    }
    if (!seen.insert(c.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": duplicate class name \"", c.name, "\""));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateGpuClass(const GpuClass& c, absl::string_view where) {
  if (c.name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": empty name"));
  }
  struct Check {
    const char* field;
    double value;
    double min_exclusive;
    double max_inclusive;
  };
  const Check checks[] = {
      {"gpu.memoryGiB", c.memory_gib, 0, 10000},
      {"gpu.bandwidthGBps", c.bandwidth_gbps, 0, 1e6},
      {"gpu.fp16TFLOPS", c.fp16_tflops, 0, 1e6},
      {"interconnect.GBps", c.interconnect_gbps, 0, 1e6},
      {"hostLinkGBps", c.host_link_gbps, 0, 1e6},
      {"pricePerGPUHour.onDemand", c.price_on_demand_per_gpu_hour, 0, 1e4},
  };
  for (const Check& k : checks) {
    if (!std::isfinite(k.value) || k.value <= k.min_exclusive ||
        k.value > k.max_inclusive) {
      return OutOfRange(where, k.field, k.value,
                        absl::StrCat("must be > ", k.min_exclusive,
                                     " and <= ", k.max_inclusive));
    }
  }
  const Check non_negative[] = {
      {"gpu.fp8TFLOPS", c.fp8_tflops, 0, 1e6},
      {"gpu.int8TOPS", c.int8_tops, 0, 1e6},
      {"gpu.fp4TFLOPS", c.fp4_tflops, 0, 1e6},
      {"pricePerGPUHour.spot", c.price_spot_per_gpu_hour, 0, 1e4},
      {"hostMemoryGiBPerGPU", c.host_memory_gib_per_gpu, 0, 1e5},
  };
  for (const Check& k : non_negative) {
    if (!std::isfinite(k.value) || k.value < 0 || k.value > k.max_inclusive) {
      return OutOfRange(where, k.field, k.value,
                        absl::StrCat("must be >= 0 and <= ", k.max_inclusive,
                                     "; 0 means unsupported"));
    }
  }
  if (c.max_gpus_per_node < 1 || c.max_gpus_per_node > 64) {
    return OutOfRange(where, "maxGPUsPerNode", c.max_gpus_per_node,
                      "must be 1..64");
  }
  return absl::OkStatus();
}

absl::StatusOr<Catalog> Catalog::FromYaml(absl::string_view yaml,
                                          absl::string_view origin) {
  absl::StatusOr<YAML::Node> doc = LoadYamlDocument(yaml, origin);
  if (!doc.ok()) {
    return doc.status();
  }
  const YAML::Node root = *doc;
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": expected a GPUCatalog document with a \"classes\" list"));
  }
  if (root["kind"] && root["kind"].IsScalar() &&
      root["kind"].Scalar() != "GPUCatalog") {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": kind is \"", root["kind"].Scalar(),
                     "\", expected \"GPUCatalog\""));
  }
  const YAML::Node list = root["classes"];
  if (!list || !list.IsSequence()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": missing list \"classes\""));
  }
  std::vector<GpuClass> classes;
  classes.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    absl::StatusOr<GpuClass> c;
    try {
      c = ParseClass(list[i], absl::StrCat(origin, ": classes[", i, "]"));
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": classes[", i, "]: malformed entry: ", e.what()));
    }
    if (!c.ok()) {
      return c.status();
    }
    classes.push_back(*std::move(c));
  }
  if (absl::Status s = ValidateCatalog(classes, origin); !s.ok()) {
    return s;
  }
  return Catalog(std::move(classes));
}

absl::StatusOr<Catalog> Catalog::Default() {
  return FromYaml(DefaultCatalogYaml(), "<default catalog>");
}

absl::StatusOr<Catalog> Catalog::FromClasses(std::vector<GpuClass> classes) {
  if (absl::Status s = ValidateCatalog(classes, "<catalog>"); !s.ok()) {
    return s;
  }
  return Catalog(std::move(classes));
}

Catalog Catalog::WithClasses(const Catalog& extra) const {
  std::vector<GpuClass> classes = classes_;
  for (const GpuClass& c : extra.classes_) {
    std::erase_if(classes, [&](const GpuClass& b) { return b.name == c.name; });
    classes.push_back(c);
  }
  // Both were validated and names stay unique: no need to validate again.
  return Catalog(std::move(classes));
}

const GpuClass* Catalog::Find(absl::string_view name) const {
  for (const GpuClass& c : classes_) {
    if (c.name == name) {
      return &c;
    }
  }
  return nullptr;
}

absl::StatusOr<const GpuClass*> Catalog::Get(absl::string_view name) const {
  if (const GpuClass* c = Find(name)) {
    return c;
  }
  return absl::NotFoundError(
      absl::StrCat("unknown GPU class \"", name, "\" (known: ", Names(), ")"));
}

std::string Catalog::Names() const {
  return absl::StrJoin(classes_, ", ", [](std::string* out, const GpuClass& c) {
    out->append(c.name);
  });
}

}  // namespace pilotlight::model
