#include "controller/policy/tier_table.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/base/ceil_div.h"

namespace pilotlight::policy {

absl::Status TierTable::Refresh(const Snapshot& s,
                                const DeciderConfig& config) {
  rebuilt_ = false;
  if (s.spec->generation != generation_ || catalog_ != s.catalog) {
    status_ = Rebuild(s, config);
    rebuilt_ = true;
  }
  spec_ = s.spec;
  return status_;
}

absl::Status TierTable::Rebuild(const Snapshot& s,
                                const DeciderConfig& config) {
  const EndpointSpec& spec = *s.spec;
  generation_ = spec.generation;
  spec_ = s.spec;
  catalog_ = s.catalog;
  // What the servers taught about a class outlives a spec change that keeps
  // the model (a new min replicas, say); a new model starts over.
  Learned learned;
  if (spec.model.name == calibrated_model_) {
    for (Tier& t : tiers_) {
      learned.emplace_back(t.gpu_class, std::move(t.calibrator));
    }
  }
  calibrated_model_ = spec.model.name;
  variants_.clear();
  tiers_.clear();
  if (absl::Status st = ValidateEndpointSpec(spec, *s.catalog); !st.ok()) {
    return st;
  }
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    const VariantSpec& vs = spec.variants[i];
    absl::StatusOr<VariantModel> m =
        DeriveVariant(spec, i, *s.catalog, config.tuning);
    if (!m.ok()) {
      return m.status();
    }
    const int tier = TierFor(s, i, *m, config, learned);
    Tier& t = tiers_[static_cast<size_t>(tier)];
    int& slot = vs.capacity == CapacityType::kSpot ? t.spot : t.on_demand;
    if (slot >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variants[", i, "]: a second ", CapacityTypeName(vs.capacity),
          " variant on ", vs.gpu_class, " x", vs.gpus_per_replica,
          " (variants[", slot, "]); one per capacity type per tier"));
    }
    slot = static_cast<int>(i);
    variants_.push_back({.tier = tier,
                         .price_per_replica_hour = m->price_per_replica_hour,
                         .lead_estimate = m->cold_start,
                         .node_provisioning = m->node_provisioning,
                         .billing = vs.billing_granularity.value_or(
                             config.billing_granularity)});
  }
  const bool any_fits =
      std::any_of(tiers_.begin(), tiers_.end(),
                  [](const Tier& t) { return t.model_capacity > 0; });
  if (!any_fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no variant can serve ", spec.model.name, " within the TPOT SLO of ",
        absl::ToDoubleSeconds(spec.slo.tpot),
        " s (run `pilotlight size` for the reasons)"));
  }
  return absl::OkStatus();
}

// A tier is a GPU model at a tensor-parallel degree: the same class name,
// or -- as with GPUClass objects, one per capacity type -- two classes of
// the same GPU model, one on-demand and one spot.
int TierTable::TierFor(const Snapshot& s, size_t i, const VariantModel& m,
                       const DeciderConfig& config, Learned& learned) {
  const VariantSpec& vs = s.spec->variants[i];
  const bool spot_variant = vs.capacity == CapacityType::kSpot;
  const std::string& gpu_model = s.catalog->Find(vs.gpu_class)->gpu_model;
  for (size_t t = 0; t < tiers_.size(); ++t) {
    const Tier& c = tiers_[t];
    if (c.replica->tensor_parallel() != vs.gpus_per_replica) {
      continue;
    }
    const int taken = spot_variant ? c.spot : c.on_demand;
    if (c.gpu_class == vs.gpu_class ||
        (c.gpu_model == gpu_model && taken < 0)) {
      return static_cast<int>(t);
    }
  }
  Tier t;
  t.calibrator = model::Calibrator(config.calibration);
  for (auto& [cls, c] : learned) {
    if (cls == vs.gpu_class) {
      t.calibrator = std::move(c);
    }
  }
  t.gpu_class = vs.gpu_class;
  t.gpu_model = gpu_model;
  t.replica.emplace(m.replica);
  t.model_capacity = m.capacity;
  t.ttft_s = m.ttft_s;
  tiers_.push_back(std::move(t));
  return static_cast<int>(tiers_.size()) - 1;
}

int TierTable::Capacity(int tier) const {
  const Tier& t = this->tier(tier);
  if (!t.replica || t.model_capacity <= 0) {
    return 0;
  }
  if (spec_->concurrency_per_replica > 0) {
    return t.model_capacity;
  }
  // How much faster than modelled a replica runs: the calibrated decode
  // factor from the engines' histograms where there is one (steps `scale`
  // times the model's: speed 1 / scale), else the tokens/s correction.
  const model::Factor& decode = t.calibrator.decode();
  const bool calibrated = decode.state == model::CalibrationState::kCalibrated;
  if (std::abs((calibrated ? decode.scale : t.correction) - 1.0) < 0.02) {
    return t.model_capacity;
  }
  // A replica `c` times faster than modelled meets TPOT(b)/c <= SLO, i.e.
  // the model's TPOT(b) <= c x SLO. Floored at 1: a replica slower than the
  // SLO still serves one sequence; a zero here would size a loaded
  // endpoint to nothing.
  const double slo_s = absl::ToDoubleSeconds(spec_->slo.tpot);
  return std::max(1, t.replica->MaxConcurrency(
                         spec_->workload, calibrated ? slo_s / decode.scale
                                                     : slo_s * t.correction));
}

int TierTable::ReplicasFor(int t, double demand,
                           double target_utilization) const {
  const double cap = Capacity(t) * target_utilization;
  return cap > 0 ? std::max(1, CeilDiv(demand, cap)) : 0;
}

absl::Duration TierTable::Lead(const Snapshot& s, int tier) const {
  absl::Duration lead;
  const Tier& t = this->tier(tier);
  for (int v : {t.on_demand, t.spot}) {
    if (v < 0) {
      continue;
    }
    const VariantState& state = s.variants[static_cast<size_t>(v)];
    const Variant& model = variant(v);
    // The learned p90 (pods created -> Ready) once there are samples, else
    // the model; plus a node's start while the pool has no free GPU.
    absl::Duration d = state.cold_start.samples >= 3 ? state.cold_start.p90
                                                     : model.lead_estimate;
    if (!state.node_free) {
      d += model.node_provisioning;
    }
    lead = std::max(lead, d);
  }
  return lead;
}

double TierTable::ServiceSecondsAt(int tier, int batch) const {
  const Tier& t = this->tier(std::max(tier, 0));
  return t.ttft_s + spec_->workload.output_tokens *
                        t.replica->TpotSeconds(batch, spec_->workload);
}

double TierTable::Price(int v) const {
  return v < 0 ? 0.0 : variant(v).price_per_replica_hour;
}

int TierTable::KeepVariant(int tier) const {
  const Tier& t = this->tier(tier);
  return t.on_demand >= 0 && (t.spot < 0 || spec_->mode == Mode::kRealtime)
             ? t.on_demand
             : t.spot;
}

int TierTable::PrimaryVariant(int tier) const {
  const Tier& t = this->tier(tier);
  return t.on_demand >= 0 ? t.on_demand : t.spot;
}

bool TierTable::SpotUnhealthy(const Snapshot& s, int tier, absl::Time now,
                              const DeciderConfig& config) const {
  const Tier& t = this->tier(tier);
  if (t.spot < 0) {
    return false;
  }
  const std::string& spot_class =
      s.spec->variants[static_cast<size_t>(t.spot)].gpu_class;
  for (const SpotHealth& h : s.spot) {
    if (h.gpu_class != spot_class) {
      continue;
    }
    for (const std::optional<absl::Time>& at :
         {h.last_preemption, h.last_failed_placement}) {
      if (at && now - *at < config.spot_unhealthy_for) {
        return true;
      }
    }
  }
  const absl::Duration timeout =
      std::max(config.spot_placement_timeout, 2 * Lead(s, tier));
  for (absl::Time started : s.variants[static_cast<size_t>(t.spot)].starting) {
    if (now - started > timeout) {
      return true;  // not placed / not ready in time
    }
  }
  return false;
}

void TierTable::Learn(int tier, const DemandSample& d, int ready,
                      const DeciderConfig& config) {
  Tier& t = tiers_[static_cast<size_t>(tier)];
  if (!t.replica || !d.in_flight || ready <= 0) {
    return;
  }
  const model::Workload& w = spec_->workload;
  const double batch = *d.in_flight / ready;
  // Online capacity correction from measured decode speed: the modelled
  // generated tokens/s of `in_flight` requests of the typical shape, each
  // yielding its output tokens per service time.
  if (d.output_tokens_per_s && batch >= 1) {
    const int b = static_cast<int>(std::lround(batch));
    const double per_request_s =
        t.ttft_s + w.output_tokens * t.replica->TpotSeconds(b, w);
    const double predicted = *d.in_flight * w.output_tokens / per_request_s;
    if (predicted > 0 && *d.output_tokens_per_s > 0) {
      const double ratio =
          std::clamp(*d.output_tokens_per_s / predicted, config.correction_min,
                     config.correction_max);
      t.correction = (1 - config.correction_alpha) * t.correction +
                     config.correction_alpha * ratio;
    }
  }
  // Calibration from the engines' latency histograms: mean inter-token
  // latency at the mean batch per ready replica (and TTFT when nothing
  // queued). A nonsense sample is refused and recorded by the calibrator;
  // it moves nothing.
  if (d.latency) {
    model::LatencySample l;
    l.at = d.at;
    l.itl_s = d.latency->itl_s;
    l.itl_count = d.latency->itl_tokens;
    l.batch = batch;
    l.ttft_s = d.latency->ttft_s;
    l.ttft_count = d.latency->prompt_tokens > 0 ? d.latency->ttft_requests : 0;
    l.prompt_tokens = d.latency->prompt_tokens;
    l.waiting = d.queued.value_or(0) / ready;
    (void)t.calibrator.Add(l, *t.replica, w);
  }
}

size_t TierTable::HeapBytes() const {
  size_t bytes = variants_.capacity() * sizeof(Variant) +
                 tiers_.capacity() * sizeof(Tier) +
                 calibrated_model_.capacity();
  for (const Tier& t : tiers_) {
    bytes += t.gpu_class.capacity() + t.calibrator.last_rejection().capacity();
  }
  return bytes;
}

}  // namespace pilotlight::policy
