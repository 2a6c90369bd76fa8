#include "controller/kube/leader_election.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "controller/base/json_fields.h"
#include "nlohmann/json.hpp"

namespace pilotlight::kube {
namespace {

using json = nlohmann::json;

std::string MicroTime(absl::Time t) {
  // metav1.MicroTime is parsed strictly: exactly six fractional digits.
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

}  // namespace

absl::Status ValidateLeaderElectionConfig(const LeaderElectionConfig& c) {
  if (c.identity.empty()) {
    return absl::InvalidArgumentError("leader election needs an identity");
  }
  if (c.lease_duration <= c.renew_deadline) {
    return absl::InvalidArgumentError(
        "leaseDuration must be greater than renewDeadline");
  }
  if (c.renew_deadline <= c.retry_period * 1.2) {
    return absl::InvalidArgumentError(
        "renewDeadline must be greater than retryPeriod x 1.2");
  }
  return absl::OkStatus();
}

LeaderElector::LeaderElector(KubeClient& client, LeaderElectionConfig config,
                             const Clock& clock)
    : client_(client),
      config_(std::move(config)),
      clock_(clock),
      jitter_state_(std::hash<std::string>{}(config_.identity) | 1U) {}

std::string LeaderElector::LeasePath() const {
  return absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/",
                      config_.lease_namespace, "/leases/", config_.lease_name);
}

bool LeaderElector::Create(absl::Time now, int64_t duration_s) {
  const json lease = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata",
       {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
      {"spec",
       {{"holderIdentity", config_.identity},
        {"leaseDurationSeconds", duration_s},
        {"acquireTime", MicroTime(now)},
        {"renewTime", MicroTime(now)},
        {"leaseTransitions", 0}}}};
  absl::StatusOr<KubeClient::Response> created =
      client_.Request("POST",
                      absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/",
                                   config_.lease_namespace, "/leases"),
                      lease.dump());
  if (!created.ok()) {
    last_error_ = created.status().ToString();
    return false;
  }
  observed_time_ = now;
  return true;
}

bool LeaderElector::TryAcquireOrRenew() {
  const absl::Time now = clock_.Now();
  const int64_t duration_s = absl::ToInt64Seconds(config_.lease_duration);
  absl::StatusOr<KubeClient::Response> got =
      client_.Request("GET", LeasePath(), "");
  if (!got.ok() && got.status().code() == absl::StatusCode::kNotFound) {
    return leader_ = Create(now, duration_s);
  }
  if (!got.ok()) {
    last_error_ = got.status().ToString();
    return leader_ = false;
  }
  json lease = json::parse(got->body, nullptr, false);
  if (!lease.is_object()) {
    last_error_ = "lease is not JSON";
    return leader_ = false;
  }
  json& spec = lease["spec"];
  if (!spec.is_object()) {
    spec = json::object();  // a malformed lease is taken over as an empty one
  }
  const std::string holder = StringField(spec, {"holderIdentity"});
  const int64_t transitions = IntField(spec, {"leaseTransitions"});
  const std::string record = absl::StrCat(
      holder, "|", StringField(spec, {"renewTime"}), "|", transitions);
  if (record != observed_record_) {
    observed_record_ = record;
    observed_time_ = now;
  }
  const int64_t held_s = IntField(spec, {"leaseDurationSeconds"});
  const absl::Duration held_for =
      absl::Seconds(held_s > 0 ? held_s : duration_s);
  if (!holder.empty() && holder != config_.identity &&
      observed_time_ + held_for > now) {
    return leader_ = false;  // someone else holds an unexpired lease
  }
  if (holder != config_.identity) {
    spec["acquireTime"] = MicroTime(now);
    spec["leaseTransitions"] = transitions + 1;
  }
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = duration_s;
  spec["renewTime"] = MicroTime(now);
  // PUT carries metadata.resourceVersion: a concurrent writer gets 409.
  absl::StatusOr<KubeClient::Response> put =
      client_.Request("PUT", LeasePath(), lease.dump());
  if (!put.ok()) {
    last_error_ = put.status().ToString();
    return leader_ = false;
  }
  const json updated = json::parse(put->body, nullptr, false);
  if (updated.is_object()) {
    observed_record_ =
        absl::StrCat(StringField(updated, {"spec", "holderIdentity"}), "|",
                     StringField(updated, {"spec", "renewTime"}), "|",
                     IntField(updated, {"spec", "leaseTransitions"}));
  }
  observed_time_ = now;
  return leader_ = true;
}

void LeaderElector::SleepUnless(const std::atomic<bool>& stop,
                                absl::Duration d) {
  for (absl::Duration slept; slept < d && !stop;
       slept += absl::Milliseconds(100)) {
    clock_.SleepFor(std::min(absl::Milliseconds(100), d - slept));
  }
}

void LeaderElector::Run(const std::atomic<bool>& stop,
                        const std::function<void()>& on_started,
                        const std::function<void()>& on_stopped) {
  absl::Time last_renew = absl::InfinitePast();
  bool leading = false;
  while (!stop) {
    if (!leading) {
      if (TryAcquireOrRenew()) {
        leading = true;
        last_renew = clock_.Now();
        on_started();
        continue;
      }
      // client-go's wait.JitterUntil: retry x [1, 1 + 1.2).
      jitter_state_ =
          jitter_state_ * 6364136223846793005ULL + 1442695040888963407ULL;
      const double jitter =
          1.0 + 1.2 * static_cast<double>(jitter_state_ >> 11) * 0x1.0p-53;
      SleepUnless(stop, config_.retry_period * jitter);
      continue;
    }
    SleepUnless(stop, config_.retry_period);
    if (stop) {
      break;
    }
    if (TryAcquireOrRenew()) {
      last_renew = clock_.Now();
    } else if (clock_.Now() - last_renew > config_.renew_deadline) {
      leading = false;
      leader_ = false;
      on_stopped();
    }
  }
  if (leading) {
    Release();
    on_stopped();
  }
}

void LeaderElector::Release() {
  absl::StatusOr<KubeClient::Response> got =
      client_.Request("GET", LeasePath(), "");
  if (!got.ok()) {
    return;
  }
  json lease = json::parse(got->body, nullptr, false);
  if (!lease.is_object() ||
      StringField(lease, {"spec", "holderIdentity"}) != config_.identity) {
    return;
  }
  // client-go's ReleaseOnCancel: an empty holder and a 1 s lease, keeping
  // the transition count, so a standby takes over at its next retry.
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  (void)client_.Request("PUT", LeasePath(), lease.dump());
  leader_ = false;
}

}  // namespace pilotlight::kube
