#include "controller/api/resources.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/base/json_fields.h"
#include "controller/base/status_macros.h"
#include "controller/model/model_profile.h"
#include "controller/model/precision.h"
#include "controller/model/sizing.h"
#include "controller/policy/variant_model.h"

namespace pilotlight::api {
namespace {

using json = nlohmann::json;

absl::StatusOr<double> Number(const json& obj, const char* key,
                              const std::string& path,
                              std::optional<double> fallback) {
  const json& v = Field(obj, {key});
  if (v.is_null()) {
    if (fallback) {
      return *fallback;
    }
    return absl::InvalidArgumentError(absl::StrCat(path, key, ": required"));
  }
  if (!v.is_number() || !std::isfinite(v.get<double>())) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, key, ": want a number, got ", v.dump()));
  }
  return v.get<double>();
}

absl::StatusOr<int> Int(const json& obj, const char* key,
                        const std::string& path, int fallback) {
  const json& v = Field(obj, {key});
  if (v.is_null()) {
    return fallback;
  }
  if (!v.is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, key, ": want an integer, got ", v.dump()));
  }
  return v.get<int>();
}

absl::StatusOr<std::string> String(const json& obj, const char* key,
                                   const std::string& path,
                                   std::optional<std::string> fallback) {
  const json& v = Field(obj, {key});
  if (v.is_null()) {
    if (fallback) {
      return *fallback;
    }
    return absl::InvalidArgumentError(absl::StrCat(path, key, ": required"));
  }
  if (!v.is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, key, ": want a string, got ", v.dump()));
  }
  return v.get<std::string>();
}

bool Bool(const json& obj, const char* key, bool fallback) {
  const json& v = Field(obj, {key});
  return v.is_boolean() ? v.get<bool>() : fallback;
}

absl::StatusOr<model::InterconnectKind> Interconnect(const std::string& s) {
  if (s == "NVLink") {
    return model::InterconnectKind::kNvlink;
  }
  if (s == "InfinityFabric") {
    return model::InterconnectKind::kInfinityFabric;
  }
  if (s == "PCIe" || s == "None") {
    return model::InterconnectKind::kPcie;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("spec.interconnect.kind: \"", s,
                   "\" is not NVLink, PCIe, InfinityFabric or None"));
}

// yaml-cpp keeps the flow style of what it loaded (JSON); people read
// block style.
void SetBlockStyle(YAML::Node n) {
  if (n.IsMap() || n.IsSequence()) {
    n.SetStyle(YAML::EmitterStyle::Block);
    for (auto it = n.begin(); it != n.end(); ++it) {
      SetBlockStyle(n.IsMap() ? it->second : *it);
    }
  }
}

std::string CapacityLabel(policy::CapacityType c) {
  return c == policy::CapacityType::kSpot ? "spot" : "on-demand";
}

// The defaults the code holds: the CRD schema states the same ones
// (tests/api/defaults_test.cc holds them equal), so an object the API server
// defaulted and one it did not parse alike.
const model::ColdStartAssumptions kCold;
const model::Workload kWorkload;
const policy::EndpointSpec kSpec;

// spec.provisioning: how a replica of the class starts.
absl::Status ParseProvisioning(const json& spec,
                               model::ColdStartAssumptions& cold) {
  const json& p = Field(spec, {"provisioning"});
  const std::string pp = "spec.provisioning.";
  PL_ASSIGN_OR_RETURN(double node_s,
                      Number(p, "nodeStartSeconds", pp,
                             absl::ToDoubleSeconds(kCold.node_provisioning)));
  cold.node_provisioning = absl::Seconds(node_s);
  cold.image_cached = Bool(p, "imageCached", kCold.image_cached);
  PL_ASSIGN_OR_RETURN(cold.image_gib,
                      Number(p, "imageGiB", pp, kCold.image_gib));
  PL_ASSIGN_OR_RETURN(cold.pull_gbps,
                      Number(p, "pullGBps", pp, kCold.pull_gbps));
  PL_ASSIGN_OR_RETURN(cold.storage_gbps,
                      Number(p, "storageGBps", pp, kCold.storage_gbps));
  PL_ASSIGN_OR_RETURN(double init_s,
                      Number(p, "engineInitSeconds", pp,
                             absl::ToDoubleSeconds(kCold.engine_init)));
  cold.engine_init = absl::Seconds(init_s);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GpuClassResource> ParseGpuClass(const json& object) {
  GpuClassResource r;
  const json& meta = Field(object, {"metadata"});
  PL_ASSIGN_OR_RETURN(r.gpu.name, String(meta, "name", "metadata.", {}));
  const json& spec = Field(object, {"spec"});
  if (!spec.is_object()) {
    return absl::InvalidArgumentError("spec: required");
  }
  const json& gpu = Field(spec, {"gpu"});
  const std::string g = "spec.gpu.";
  PL_ASSIGN_OR_RETURN(r.gpu.gpu_model, String(gpu, "model", g, {}));
  PL_ASSIGN_OR_RETURN(r.gpu.vendor, String(gpu, "vendor", g, "NVIDIA"));
  PL_ASSIGN_OR_RETURN(r.gpu.memory_gib, Number(gpu, "memoryGiB", g, {}));
  PL_ASSIGN_OR_RETURN(r.gpu.bandwidth_gbps,
                      Number(gpu, "bandwidthGBps", g, {}));
  PL_ASSIGN_OR_RETURN(r.gpu.fp16_tflops, Number(gpu, "fp16TFLOPS", g, {}));
  r.gpu.bf16 = Bool(gpu, "bf16", true);
  PL_ASSIGN_OR_RETURN(r.gpu.fp8_tflops, Number(gpu, "fp8TFLOPS", g, 0.0));
  PL_ASSIGN_OR_RETURN(r.gpu.int8_tops, Number(gpu, "int8TOPS", g, 0.0));
  PL_ASSIGN_OR_RETURN(r.gpu.fp4_tflops, Number(gpu, "fp4TFLOPS", g, 0.0));
  const json& ic = Field(spec, {"interconnect"});
  PL_ASSIGN_OR_RETURN(std::string kind,
                      String(ic, "kind", "spec.interconnect.", "PCIe"));
  PL_ASSIGN_OR_RETURN(r.gpu.interconnect, Interconnect(kind));
  PL_ASSIGN_OR_RETURN(r.gpu.interconnect_gbps,
                      Number(ic, "GBps", "spec.interconnect.", 0.0));
  PL_ASSIGN_OR_RETURN(r.gpu.host_link_gbps,
                      Number(spec, "hostLinkGBps", "spec.", 32.0));
  PL_ASSIGN_OR_RETURN(r.gpu.max_gpus_per_node,
                      Int(spec, "maxGPUsPerNode", "spec.", 8));
  PL_ASSIGN_OR_RETURN(r.gpu.host_memory_gib_per_gpu,
                      Number(spec, "hostMemoryGiBPerGPU", "spec.", 0.0));
  PL_ASSIGN_OR_RETURN(std::string capacity,
                      String(spec, "capacityType", "spec.", {}));
  if (capacity == "Spot") {
    r.capacity = policy::CapacityType::kSpot;
  } else if (capacity != "OnDemand") {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.capacityType: \"", capacity, "\" is not OnDemand or Spot"));
  }
  PL_ASSIGN_OR_RETURN(double price,
                      Number(spec, "pricePerGPUHour", "spec.", {}));
  r.gpu.price_on_demand_per_gpu_hour = price;
  r.gpu.price_spot_per_gpu_hour = price;
  for (const auto& [k, v] : Field(spec, {"nodeSelector"}).items()) {
    if (v.is_string()) {
      r.node_selector[k] = v.get<std::string>();
    }
  }
  r.gpu.node_labels = r.node_selector;
  PL_RETURN_IF_ERROR(ParseProvisioning(spec, r.cold_start));
  if (!Field(spec, {"billingGranularitySeconds"}).is_null()) {
    PL_ASSIGN_OR_RETURN(double billing_s,
                        Number(spec, "billingGranularitySeconds", "spec.", {}));
    if (!(billing_s >= 1 && billing_s <= 31 * 86400)) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.billingGranularitySeconds: ", billing_s,
                       " is not between 1 s and 31 days"));
    }
    r.billing_granularity = absl::Seconds(billing_s);
  }
  if (r.gpu.interconnect_gbps <= 0) {  // unset: GPUs talk over the host link
    r.gpu.interconnect_gbps = r.gpu.host_link_gbps;
  }
  r.gpu.source = "GPUClass " + r.gpu.name;
  // The catalog's own range checks, so a bad class is refused here, once.
  if (absl::StatusOr<model::Catalog> one = model::Catalog::FromClasses({r.gpu});
      !one.ok()) {
    return absl::InvalidArgumentError(one.status().message());
  }
  return r;
}

absl::StatusOr<model::Catalog> CatalogOf(
    const std::map<std::string, GpuClassResource>& classes) {
  std::vector<model::GpuClass> entries;
  entries.reserve(classes.size());
  for (const auto& [name, c] : classes) {
    entries.push_back(c.gpu);
  }
  return model::Catalog::FromClasses(std::move(entries));
}

json GpuClassObject(const model::GpuClass& entry,
                    policy::CapacityType capacity) {
  const bool spot = capacity == policy::CapacityType::kSpot;
  json selector(json::value_t::object);
  for (const auto& [k, v] : entry.node_labels) {
    selector[k] = v;
  }
  selector["karpenter.sh/capacity-type"] = CapacityLabel(capacity);
  json labels = {{"app.kubernetes.io/part-of", "pilotlight"}};
  if (!entry.cloud.empty()) {
    labels["pilotlight.dev/cloud"] = entry.cloud;  // the chart selects by it
  }
  json object = {
      {"apiVersion", "pilotlight.dev/v1alpha1"},
      {"kind", "GPUClass"},
      {"metadata",
       {{"name", absl::StrCat(entry.name, "-", CapacityLabel(capacity))},
        {"labels", labels}}},
      {"spec",
       {{"gpu",
         {{"model", entry.gpu_model},
          {"vendor", entry.vendor},
          {"memoryGiB", entry.memory_gib},
          {"bandwidthGBps", entry.bandwidth_gbps},
          {"fp16TFLOPS", entry.fp16_tflops},
          {"bf16", entry.bf16},
          {"fp8TFLOPS", entry.fp8_tflops},
          {"int8TOPS", entry.int8_tops}}},
        {"interconnect",
         {{"kind", std::string(model::InterconnectName(entry.interconnect))},
          {"GBps", entry.interconnect_gbps}}},
        {"hostLinkGBps", entry.host_link_gbps},
        {"maxGPUsPerNode", entry.max_gpus_per_node},
        {"hostMemoryGiBPerGPU", entry.host_memory_gib_per_gpu},
        {"capacityType", spot ? "Spot" : "OnDemand"},
        {"pricePerGPUHour", spot ? entry.price_spot_per_gpu_hour
                                 : entry.price_on_demand_per_gpu_hour},
        {"nodeSelector", selector}}},
  };
  // Written only where the class has FP4 tensor cores, so that classes
  // without them render as they did before the field existed.
  if (entry.fp4_tflops > 0) {
    object["spec"]["gpu"]["fp4TFLOPS"] = entry.fp4_tflops;
  }
  return object;
}

std::string DefaultGpuClassesYaml(const model::Catalog& catalog) {
  std::ostringstream out;
  out << "# Default GPUClasses, one per shipped catalog entry and capacity\n"
         "# type (spot where the entry has a spot price). Generated by\n"
         "# `pilotlight gpuclasses` from controller/model/data/"
         "gpu_catalog.yaml;\n"
         "# prices are scenario figures: set your own.\n";
  for (const model::GpuClass& c : catalog.classes()) {
    for (const policy::CapacityType cap :
         {policy::CapacityType::kOnDemand, policy::CapacityType::kSpot}) {
      if (cap == policy::CapacityType::kSpot &&
          c.price_spot_per_gpu_hour <= 0) {
        continue;
      }
      YAML::Node node = YAML::Load(GpuClassObject(c, cap).dump());
      SetBlockStyle(node);
      YAML::Emitter e;
      e << node;
      out << "---\n" << e.c_str() << "\n";
    }
  }
  return out.str();
}

namespace {

// spec.model: the preset, its precisions and the typical request's shape.
absl::Status ParseModel(const json& spec, policy::EndpointSpec& s) {
  const json& m = Field(spec, {"model"});
  const std::string mp = "spec.model.";
  PL_ASSIGN_OR_RETURN(std::string preset, String(m, "preset", mp, {}));
  absl::StatusOr<model::ModelProfile> profile = model::FindPreset(preset);
  if (!profile.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(mp, "preset: ", profile.status().message()));
  }
  s.model = *profile;
  for (const auto& [key, target] :
       {std::pair<const char*, model::Precision*>{"precision", &s.weights},
        {"kvCachePrecision", &s.kv}}) {
    PL_ASSIGN_OR_RETURN(std::string name, String(m, key, mp, "bf16"));
    absl::StatusOr<model::Precision> p = model::ParsePrecision(name);
    if (!p.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(mp, key, ": ", p.status().message()));
    }
    *target = *p;
  }
  PL_ASSIGN_OR_RETURN(s.workload.context_tokens,
                      Int(m, "maxContextTokens", mp, kWorkload.context_tokens));
  PL_ASSIGN_OR_RETURN(s.workload.prompt_tokens,
                      Int(m, "promptTokens", mp, kWorkload.prompt_tokens));
  PL_ASSIGN_OR_RETURN(s.workload.output_tokens,
                      Int(m, "outputTokens", mp, kWorkload.output_tokens));

  return absl::OkStatus();
}

// spec.mode, spec.slo, spec.concurrencyPerReplica and spec.replicas.
absl::Status ParseServing(const json& spec, policy::EndpointSpec& s) {
  PL_ASSIGN_OR_RETURN(std::string mode,
                      String(spec, "mode", "spec.", "Realtime"));
  if (mode == "Batch") {
    s.mode = policy::Mode::kBatch;
  } else if (mode != "Realtime") {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.mode: \"", mode, "\" is not Realtime or Batch"));
  }

  const json& slo = Field(spec, {"slo"});
  const std::string sp = "spec.slo.";
  PL_ASSIGN_OR_RETURN(
      double ttft,
      Number(slo, "ttftSeconds", sp, absl::ToDoubleSeconds(kSpec.slo.ttft)));
  PL_ASSIGN_OR_RETURN(
      double tpot,
      Number(slo, "tpotSeconds", sp, absl::ToDoubleSeconds(kSpec.slo.tpot)));
  s.slo.ttft = absl::Seconds(ttft);
  s.slo.tpot = absl::Seconds(tpot);
  PL_ASSIGN_OR_RETURN(s.slo.max_cold_start_fraction,
                      Number(slo, "maxColdStartFraction", sp,
                             kSpec.slo.max_cold_start_fraction));
  if (!Field(slo, {"coldStartPenaltyUSD"}).is_null()) {
    PL_ASSIGN_OR_RETURN(s.slo.cold_start_penalty_usd,
                        Number(slo, "coldStartPenaltyUSD", sp, {}));
  }
  if (!Field(slo, {"maxKeepAliveCostPerDayUSD"}).is_null()) {
    PL_ASSIGN_OR_RETURN(s.slo.max_keep_alive_cost_per_day_usd,
                        Number(slo, "maxKeepAliveCostPerDayUSD", sp, {}));
  }
  PL_ASSIGN_OR_RETURN(s.concurrency_per_replica,
                      Int(spec, "concurrencyPerReplica", "spec.",
                          kSpec.concurrency_per_replica));
  const json& rep = Field(spec, {"replicas"});
  PL_ASSIGN_OR_RETURN(s.min_replicas,
                      Int(rep, "min", "spec.replicas.", kSpec.min_replicas));
  PL_ASSIGN_OR_RETURN(s.max_replicas,
                      Int(rep, "max", "spec.replicas.", kSpec.max_replicas));

  return absl::OkStatus();
}

// spec.variants, each on a GPUClass of `classes` (its capacity type, cold
// start and billing from there).
absl::Status ParseVariants(
    const json& spec, const std::map<std::string, GpuClassResource>& classes,
    policy::EndpointSpec& s) {
  const json& variants = Field(spec, {"variants"});
  if (!variants.is_array() || variants.empty()) {
    return absl::InvalidArgumentError("spec.variants: at least one is needed");
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    const std::string vp = absl::StrCat("spec.variants[", i, "].");
    policy::VariantSpec v;
    PL_ASSIGN_OR_RETURN(v.deployment,
                        String(variants[i], "deployment", vp, {}));
    PL_ASSIGN_OR_RETURN(v.gpu_class, String(variants[i], "gpuClass", vp, {}));
    PL_ASSIGN_OR_RETURN(v.gpus_per_replica,
                        Int(variants[i], "gpusPerReplica", vp,
                            policy::VariantSpec{}.gpus_per_replica));
    auto c = classes.find(v.gpu_class);
    if (c == classes.end()) {
      return absl::NotFoundError(absl::StrCat(vp, "gpuClass: GPUClass \"",
                                              v.gpu_class, "\" not found"));
    }
    v.capacity = c->second.capacity;
    v.cold_start = c->second.cold_start;
    v.billing_granularity = c->second.billing_granularity;
    s.variants.push_back(std::move(v));
  }

  return absl::OkStatus();
}

// spec.metrics: the server preset, or custom PromQL.
absl::Status ParseMetrics(const json& spec, AutoscalerResource& r) {
  const json& metrics = Field(spec, {"metrics"});
  const std::string xp = "spec.metrics.";
  PL_ASSIGN_OR_RETURN(std::string server,
                      String(metrics, "server", xp, "vllm"));
  absl::StatusOr<prom::MetricsServer> srv = prom::ParseMetricsServer(server);
  if (!srv.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(xp, "server: ", srv.status().message()));
  }
  r.metrics.server = *srv;
  if (r.metrics.server == prom::MetricsServer::kCustom) {
    PL_ASSIGN_OR_RETURN(r.metrics.concurrency_query,
                        String(metrics, "concurrencyQuery", xp, {}));
    PL_ASSIGN_OR_RETURN(r.metrics.arrival_rate_query,
                        String(metrics, "arrivalRateQuery", xp, {}));
  }

  return absl::OkStatus();
}

// spec.sleepPool: optional; the schema checks the same.
absl::Status ParseSleepPool(
    const json& spec, const std::map<std::string, GpuClassResource>& classes,
    AutoscalerResource& r) {
  const json& pool = Field(spec, {"sleepPool"});
  if (pool.is_null()) {
    return absl::OkStatus();
  }
  const std::string xp = "spec.sleepPool.";
  SleepPoolSpec p;
  PL_ASSIGN_OR_RETURN(p.deployment, String(pool, "deployment", xp, {}));
  PL_ASSIGN_OR_RETURN(p.port, Int(pool, "port", xp, 0));
  PL_ASSIGN_OR_RETURN(p.gpu_class, String(pool, "gpuClass", xp,
                                          r.spec.variants.front().gpu_class));
  if (!classes.contains(p.gpu_class)) {
    return absl::NotFoundError(
        absl::StrCat(xp, "gpuClass: GPUClass \"", p.gpu_class, "\" not found"));
  }
  if (p.deployment.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(xp, "deployment: required"));
  }
  if (p.port < 1 || p.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(xp, "port: want 1-65535, got ", p.port));
  }
  for (const policy::VariantSpec& v : r.spec.variants) {
    if (v.deployment == p.deployment) {
      return absl::InvalidArgumentError(
          absl::StrCat(xp, "deployment: \"", p.deployment,
                       "\" is one of the endpoint's variants; the pool is "
                       "a Deployment of its own"));
    }
  }
  r.sleep_pool = std::move(p);
  return absl::OkStatus();
}

// What the schema cannot know: the classes named can run this model.
absl::Status CheckRuns(const policy::EndpointSpec& s,
                       const std::map<std::string, GpuClassResource>& classes) {
  // Only the classes named here are checked: another GPUClass's fault is
  // not ours.
  std::map<std::string, GpuClassResource> used;
  for (const policy::VariantSpec& v : s.variants) {
    used.emplace(v.gpu_class, classes.at(v.gpu_class));
  }
  absl::StatusOr<model::Catalog> catalog = CatalogOf(used);
  if (!catalog.ok()) {
    return catalog.status();
  }
  if (absl::Status st = policy::ValidateEndpointSpec(s, *catalog); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("spec.", st.message()));
  }
  for (size_t i = 0; i < s.variants.size(); ++i) {
    const policy::VariantSpec& v = s.variants[i];
    PL_ASSIGN_OR_RETURN(
        const policy::VariantModel vm,
        policy::DeriveVariant(s, i, *catalog, model::EngineTuning{}));
    const model::ReplicaModel& replica = vm.replica;
    if (!replica.precision_supported()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "spec.variants[%d]: GPUClass %s cannot run %s weights", i,
          v.gpu_class, model::PrecisionName(s.weights)));
    }
    const double short_bytes =
        replica.ShortfallBytesPerGpu(s.workload.context_tokens);
    if (short_bytes > 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "spec.variants[%d]: %s (%s) with one %d-token sequence needs %.1f "
          "GiB more per GPU than GPUClass %s has at gpusPerReplica %d: raise "
          "gpusPerReplica or pick a larger class",
          i, s.model.name, model::PrecisionName(s.weights),
          s.workload.context_tokens, short_bytes / (1 << 30), v.gpu_class,
          v.gpus_per_replica));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AutoscalerResource> ParseInferenceAutoscaler(
    const json& object,
    const std::map<std::string, GpuClassResource>& classes) {
  AutoscalerResource r;
  const json& meta = Field(object, {"metadata"});
  PL_ASSIGN_OR_RETURN(r.ns, String(meta, "namespace", "metadata.", {}));
  PL_ASSIGN_OR_RETURN(r.name, String(meta, "name", "metadata.", {}));
  PL_ASSIGN_OR_RETURN(r.uid, String(meta, "uid", "metadata.", ""));
  const json& gen = Field(meta, {"generation"});
  r.generation = gen.is_number_integer() ? gen.get<int64_t>() : 0;
  policy::EndpointSpec& s = r.spec;
  s.name = absl::StrCat(r.ns, "/", r.name);
  s.generation = r.generation;
  const json& spec = Field(object, {"spec"});
  if (!spec.is_object()) {
    return absl::InvalidArgumentError("spec: required");
  }
  PL_RETURN_IF_ERROR(ParseModel(spec, s));
  PL_RETURN_IF_ERROR(ParseServing(spec, s));
  PL_RETURN_IF_ERROR(ParseVariants(spec, classes, s));
  PL_RETURN_IF_ERROR(ParseMetrics(spec, r));
  PL_RETURN_IF_ERROR(ParseSleepPool(spec, classes, r));
  PL_RETURN_IF_ERROR(CheckRuns(s, classes));
  return r;
}

}  // namespace pilotlight::api
