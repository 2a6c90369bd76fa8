#include "controller/policy/decision_record.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pilotlight::policy {
namespace {

// A JSON string: quotes, backslashes and control characters escaped.
std::string Quoted(absl::string_view v) {
  std::string out = "\"";
  for (const char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string Number(const std::optional<double>& v) {
  return v ? absl::StrFormat("%.6g", *v) : "null";
}

std::string Seconds(absl::Time t, absl::Time origin) {
  return absl::StrFormat("%.3f", absl::ToDoubleSeconds(t - origin));
}

}  // namespace

std::string DecisionRecord(absl::string_view endpoint, const Snapshot& s,
                           const Decision& d, absl::Time now,
                           absl::Time origin) {
  std::string out =
      absl::StrCat("{\"t\":", Seconds(now, origin),
                   ",\"endpoint\":", Quoted(endpoint), ",\"samples\":[");
  for (size_t i = 0; i < s.demand.size(); ++i) {
    const DemandSample& x = s.demand[i];
    absl::StrAppend(&out, i > 0 ? "," : "", "{\"at\":", Seconds(x.at, origin),
                    ",\"in_flight\":", Number(x.in_flight),
                    ",\"queued\":", Number(x.queued),
                    ",\"arrivals\":", Number(x.arrivals),
                    ",\"partial\":", x.partial ? "true" : "false", "}");
  }
  out += "],\"variants\":[";
  for (size_t i = 0; i < s.variants.size(); ++i) {
    const VariantState& v = s.variants[i];
    absl::StrAppendFormat(
        &out,
        "%s{\"desired\":%d,\"ready\":%d,\"starting\":%d,\"terminating\":%d,"
        "\"cold_start_p90_s\":%.3f,\"cold_start_samples\":%d,"
        "\"node_free\":%s}",
        i > 0 ? "," : "", v.desired, v.ready,
        static_cast<int>(v.starting.size()), v.terminating,
        absl::ToDoubleSeconds(v.cold_start.p90), v.cold_start.samples,
        v.node_free ? "true" : "false");
  }
  out += "],\"replicas\":[";
  for (size_t i = 0; i < d.variants.size(); ++i) {
    absl::StrAppend(&out, i > 0 ? "," : "", d.variants[i].replicas);
  }
  absl::StrAppend(&out, "],\"reason\":", Quoted(ScaleReasonName(d.reason)),
                  ",\"message\":", Quoted(d.message), "}");
  return out;
}

}  // namespace pilotlight::policy
