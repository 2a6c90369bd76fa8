#include "controller/model/validation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "controller/base/status_macros.h"

namespace pilotlight::model {
namespace {

// One CSV record: fields separated by commas, a field in double quotes may
// hold commas, and "" inside quotes is one quote.
absl::StatusOr<std::vector<std::string>> SplitRecord(absl::string_view line) {
  std::vector<std::string> fields;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::string(absl::StripAsciiWhitespace(cur)));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (quoted) {
    return absl::InvalidArgumentError("unterminated quoted field");
  }
  fields.push_back(std::string(absl::StripAsciiWhitespace(cur)));
  return fields;
}

constexpr const char* kKinds[] = {
    "decode_tps",         "itl_ms",         "ttft_ms",
    "batch_decode_tps",   "throughput_tps", "static_tps",
    "static_tps_per_gpu", "e2e_ms"};

bool KnownKind(absl::string_view k) {
  return std::any_of(std::begin(kKinds), std::end(kKinds),
                     [&](const char* known) { return k == known; });
}

}  // namespace

namespace {

using Columns = std::map<std::string, size_t>;

// The header row: each column's index by its lower-cased name.
absl::StatusOr<Columns> ParseHeader(const std::vector<std::string>& fields,
                                    const std::string& where) {
  Columns column;
  for (size_t i = 0; i < fields.size(); ++i) {
    column[absl::AsciiStrToLower(fields[i])] = i;
  }
  for (const char* required :
       {"id", "split", "kind", "model", "gpu", "tp", "weights", "kv", "batch",
        "prompt", "output", "measured"}) {
    if (!column.contains(required)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the header has no column \"", required, "\""));
    }
  }
  return column;
}

// One measurement row's fields, by column name.
class Row {
 public:
  Row(const std::vector<std::string>& fields, const Columns& column,
      std::string where)
      : fields_(fields), column_(column), where_(std::move(where)) {}

  std::string Get(const char* name) const {
    auto it = column_.find(name);
    if (it == column_.end() || it->second >= fields_.size()) {
      return "";
    }
    return fields_[it->second];
  }
  // An integer in [min, max]; `fallback` (>= 0) when the field is empty.
  absl::StatusOr<int> Integer(const char* name, int min, int max,
                              int fallback) const {
    const std::string text = Get(name);
    if (text.empty() && fallback >= 0) {
      return fallback;
    }
    int v = 0;
    if (!absl::SimpleAtoi(text, &v) || v < min || v > max) {
      return absl::InvalidArgumentError(
          absl::StrCat(where_, ": ", name, " = \"", text,
                       "\" is not an integer in ", min, "..", max));
    }
    return v;
  }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": ", what));
  }

 private:
  const std::vector<std::string>& fields_;
  const Columns& column_;
  const std::string where_;
};

// The row's shape: split, kind, model and GPU, and its integers.
absl::Status ParseShape(const Row& row, Measurement& m) {
  m.id = row.Get("id");
  m.split = row.Get("split");
  m.kind = row.Get("kind");
  m.model = row.Get("model");
  m.gpu = row.Get("gpu");
  m.source = row.Get("source");
  if (m.split != "fit" && m.split != "holdout") {
    return row.Error(
        absl::StrCat("split = \"", m.split, "\" (expected fit or holdout)"));
  }
  if (!KnownKind(m.kind)) {
    return row.Error(absl::StrCat(
        "kind = \"", m.kind,
        "\" (known: decode_tps, itl_ms, ttft_ms, batch_decode_tps, "
        "throughput_tps, static_tps, static_tps_per_gpu, e2e_ms)"));
  }
  if (m.model.empty() || m.gpu.empty()) {
    return row.Error("model and gpu must not be empty");
  }
  PL_ASSIGN_OR_RETURN(m.tp, row.Integer("tp", 1, 64, -1));
  PL_ASSIGN_OR_RETURN(m.batch, row.Integer("batch", 1, 1'000'000, -1));
  PL_ASSIGN_OR_RETURN(m.prompt, row.Integer("prompt", 1, 10'000'000, -1));
  PL_ASSIGN_OR_RETURN(m.output, row.Integer("output", 1, 10'000'000, -1));
  PL_ASSIGN_OR_RETURN(m.group, row.Integer("group", 1, 1'000'000, 0));
  return absl::OkStatus();
}

// The row's formats, path and measured figure.
absl::Status ParseFigure(const Row& row, Measurement& m) {
  absl::StatusOr<Precision> w = ParsePrecision(row.Get("weights"));
  absl::StatusOr<Precision> kv = ParsePrecision(row.Get("kv"));
  if (!w.ok() || !kv.ok()) {
    return row.Error((!w.ok() ? w.status() : kv.status()).message());
  }
  if (*kv == Precision::kInt8 || *kv == Precision::kInt4 ||
      *kv == Precision::kFp4) {
    return row.Error(
        absl::StrCat("kv = ", row.Get("kv"), " is not a KV-cache format"));
  }
  m.weights = *w;
  m.kv = *kv;
  const std::string path = row.Get("path");
  if (path != "server" && path != "offline" && !path.empty()) {
    return row.Error(
        absl::StrCat("path = \"", path, "\" (expected server or offline)"));
  }
  m.server = path == "server";
  if (!absl::SimpleAtod(row.Get("measured"), &m.measured) ||
      !std::isfinite(m.measured) || m.measured <= 0) {
    return row.Error(absl::StrCat("measured = \"", row.Get("measured"),
                                  "\" is not a positive number"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Measurement>> ParseMeasurements(
    absl::string_view csv, absl::string_view origin) {
  std::vector<Measurement> rows;
  std::optional<Columns> column;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(csv, '\n')) {
    ++line_no;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line.front() == '#') {
      continue;
    }
    const std::string where = absl::StrCat(origin, ":", line_no);
    absl::StatusOr<std::vector<std::string>> fields = SplitRecord(line);
    if (!fields.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", fields.status().message()));
    }
    if (!column) {
      PL_ASSIGN_OR_RETURN(column, ParseHeader(*fields, where));
      continue;
    }
    const Row row(*fields, *column, where);
    Measurement m;
    m.line = line_no;
    PL_RETURN_IF_ERROR(ParseShape(row, m));
    PL_RETURN_IF_ERROR(ParseFigure(row, m));
    rows.push_back(std::move(m));
  }
  if (rows.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin,
                     ": no measurement rows (a header row, then one "
                     "row per measurement)"));
  }
  return rows;
}

std::string GoalGroup(const Measurement& m) {
  if (m.kind == "ttft_ms") {
    return "ttft";
  }
  if (m.kind == "e2e_ms") {
    return "e2e";
  }
  if ((m.kind == "decode_tps" || m.kind == "itl_ms") && m.batch == 1) {
    return "decode-b1";
  }
  return "batch";
}

namespace {

// What the model predicts for a row's measured figure.
double Predict(const Measurement& m, const ReplicaModel& replica) {
  Workload w;
  w.prompt_tokens = m.prompt;
  w.output_tokens = m.output;
  w.context_tokens = m.prompt + m.output;
  w.concurrency = m.batch;
  const double mean_kv = m.prompt + m.output / 2.0;
  const double decode_step = replica.DecodeStepSeconds(m.batch, mean_kv);
  if (m.kind == "decode_tps") {
    return 1.0 / decode_step;
  }
  if (m.kind == "itl_ms") {
    return 1e3 * decode_step;
  }
  if (m.kind == "batch_decode_tps") {
    return m.batch / decode_step;
  }
  if (m.kind == "ttft_ms") {
    return 1e3 * replica.TtftSeconds(m.prompt);
  }
  if (m.kind == "throughput_tps" || m.kind == "e2e_ms") {
    // A closed loop: each client waits for its first token, then decodes
    // the rest of its output at the loaded TPOT.
    const double per_request = replica.TtftSeconds(m.prompt) +
                               (m.output - 1) * replica.TpotSeconds(m.batch, w);
    return m.kind == "e2e_ms"
               ? 1e3 * per_request
               : m.batch * static_cast<double>(m.output) / per_request;
  }
  // static_tps, static_tps_per_gpu
  const double seconds =
      replica.StaticBatchSeconds(m.batch, m.prompt, m.output);
  const double predicted = m.batch * static_cast<double>(m.output) / seconds;
  return m.kind == "static_tps_per_gpu" ? predicted / m.tp : predicted;
}

// One row judged: its model on its GPUs at its formats, predicted.
absl::StatusOr<ValidationRow> Judge(const Measurement& m,
                                    const ModelResolver& resolve,
                                    const Catalog& catalog,
                                    const EngineTuning& tuning) {
  const std::string where = absl::StrCat("row ", m.id, " (line ", m.line, ")");
  const auto fail = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", why));
  };
  absl::StatusOr<ModelProfile> profile = resolve(m.model);
  if (!profile.ok()) {
    return fail(profile.status().message());
  }
  absl::StatusOr<const GpuClass*> gpu = catalog.Get(m.gpu);
  if (!gpu.ok()) {
    return fail(gpu.status().message());
  }
  if (!(*gpu)->SupportsWeights(m.weights)) {
    return fail(absl::StrCat((*gpu)->gpu_model, " cannot run ",
                             PrecisionName(m.weights), " weights"));
  }
  if (profile->attention_heads % m.tp != 0) {
    return fail(absl::StrCat(profile->attention_heads,
                             " attention heads do not split over TP ", m.tp));
  }
  EngineTuning t = tuning;
  if (m.group > 0) {
    t.int4_group_size = m.group;
  }
  if (!m.server) {
    t.request_overhead = absl::ZeroDuration();
  }
  const ReplicaModel replica(*profile, **gpu, m.tp, m.weights, m.kv, t);
  // Weights beyond the GPUs' memory: the row or the shape is wrong. Within
  // it but beyond the usable budget (the headroom EngineTuning assumes for
  // the runtime and activations): the row proves it ran, so it is the
  // memory model that missed; its speed is still predicted and judged.
  const double shortfall = replica.ShortfallBytesPerGpu(m.prompt + m.output);
  if (shortfall > 0 &&
      replica.weight_bytes_per_gpu() > (*gpu)->memory_gib * kGiB) {
    return fail(absl::StrCat(profile->name, " does not fit on ", m.tp, " x ",
                             m.gpu, " at ", PrecisionName(m.weights),
                             " (its weights alone exceed the GPUs' memory)"));
  }
  const double predicted = Predict(m, replica);
  return ValidationRow{.m = m,
                       .predicted = predicted,
                       .error = predicted / m.measured - 1,
                       .shortfall_gib = shortfall / kGiB};
}

}  // namespace

absl::StatusOr<ValidationReport> Validate(const std::vector<Measurement>& rows,
                                          const ModelResolver& resolve,
                                          const Catalog& catalog,
                                          const EngineTuning& tuning) {
  ValidationReport report;
  for (const Measurement& m : rows) {
    PL_ASSIGN_OR_RETURN(ValidationRow row, Judge(m, resolve, catalog, tuning));
    report.rows.push_back(std::move(row));
  }
  std::map<std::pair<std::string, std::string>, GroupSummary> by;
  for (const ValidationRow& r : report.rows) {
    for (const std::string& group : {GoalGroup(r.m), std::string("all")}) {
      GroupSummary& g = by[{r.m.split, group}];
      g.group = group;
      g.split = r.m.split;
      ++g.rows;
      g.within_20 += std::abs(r.error) <= 0.20 ? 1 : 0;
      g.within_25 += std::abs(r.error) <= 0.25 ? 1 : 0;
      g.mean_abs_error += std::abs(r.error);
    }
  }
  for (auto& [key, g] : by) {
    g.mean_abs_error /= g.rows;
    report.groups.push_back(g);
  }
  return report;
}

namespace {

// Root mean square of ln(predicted / measured): least squares in log space,
// so that 2x over and 2x under weigh the same, and two rows that disagree
// pull a term to their geometric middle rather than to either one.
double RmsLogError(const ValidationReport& r) {
  double sum = 0;
  for (const ValidationRow& row : r.rows) {
    const double e = std::log(row.predicted / row.m.measured);
    sum += e * e;
  }
  return r.rows.empty() ? 0
                        : std::sqrt(sum / static_cast<double>(r.rows.size()));
}

}  // namespace

absl::StatusOr<FitResult> FitTuning(const std::vector<Measurement>& rows,
                                    const ModelResolver& resolve,
                                    const Catalog& catalog,
                                    const EngineTuning& start) {
  auto score = [&](const EngineTuning& t) -> absl::StatusOr<double> {
    absl::StatusOr<ValidationReport> r = Validate(rows, resolve, catalog, t);
    if (!r.ok()) {
      return r.status();
    }
    return RmsLogError(*r);
  };
  // Each term: its range and its field (a fraction, or a duration fitted in
  // microseconds).
  struct Knob {
    double lo;
    double hi;
    double EngineTuning::*fraction = nullptr;
    absl::Duration EngineTuning::*duration = nullptr;
    double get(const EngineTuning& t) const {
      return fraction != nullptr ? t.*fraction
                                 : absl::ToDoubleMicroseconds(t.*duration);
    }
    void set(EngineTuning& t, double v) const {
      if (fraction != nullptr) {
        t.*fraction = v;
      } else {
        t.*duration = absl::Microseconds(v);
      }
    }
  };
  const Knob knobs[] = {
      {0.5, 1.0, &EngineTuning::memory_bandwidth_utilization},
      {0.3, 1.0, &EngineTuning::weight_read_efficiency_8bit},
      {0.3, 1.0, &EngineTuning::weight_read_efficiency_4bit},
      {0.3, 1.0, &EngineTuning::moe_expert_read_efficiency},
      {0.15, 1.0, &EngineTuning::model_flops_utilization},
      {0.15, 1.0, &EngineTuning::model_flops_utilization_8bit},
      {0.0, 1.0, &EngineTuning::roofline_overlap},
      {0, 3000, nullptr, &EngineTuning::step_overhead},
      {0, 40, nullptr, &EngineTuning::allreduce_latency_nvlink},
  };
  FitResult result;
  result.tuning = start;
  absl::StatusOr<double> best = score(start);
  if (!best.ok()) {
    return best.status();
  }
  result.before = *best;
  constexpr int kSteps = 40;
  for (int pass = 0; pass < 6; ++pass) {
    for (const Knob& k : knobs) {
      // A coarse grid over the whole range, then a finer one around the best.
      double lo = k.lo;
      double hi = k.hi;
      for (int zoom = 0; zoom < 2; ++zoom) {
        double best_value = k.get(result.tuning);
        for (int i = 0; i <= kSteps; ++i) {
          EngineTuning t = result.tuning;
          const double v = lo + (hi - lo) * i / kSteps;
          k.set(t, v);
          absl::StatusOr<double> s = score(t);
          if (s.ok() && *s < *best - 1e-12) {
            *best = *s;
            best_value = v;
          }
        }
        k.set(result.tuning, best_value);
        const double span = (hi - lo) / kSteps;
        lo = std::max(k.lo, best_value - span);
        hi = std::min(k.hi, best_value + span);
      }
    }
  }
  result.after = *best;
  return result;
}

std::string FormatTuning(const EngineTuning& t) {
  return absl::StrFormat(
      "memory_bandwidth_utilization = %.3f\n"
      "weight_read_efficiency_8bit = %.3f\n"
      "weight_read_efficiency_4bit = %.3f\n"
      "moe_expert_read_efficiency = %.3f\n"
      "model_flops_utilization = %.3f\n"
      "model_flops_utilization_8bit = %.3f\n"
      "roofline_overlap = %.3f\n"
      "step_overhead = %.0f us\n"
      "allreduce_latency_nvlink = %.1f us (per doubling of tp)\n",
      t.memory_bandwidth_utilization, t.weight_read_efficiency_8bit,
      t.weight_read_efficiency_4bit, t.moe_expert_read_efficiency,
      t.model_flops_utilization, t.model_flops_utilization_8bit,
      t.roofline_overlap, absl::ToDoubleMicroseconds(t.step_overhead),
      absl::ToDoubleMicroseconds(t.allreduce_latency_nvlink));
}

std::string FormatValidation(const ValidationReport& report) {
  // The model and GPU columns as wide as their longest entry (a config.json
  // path can be long), so the figures stay aligned.
  int model_w = 14;
  int gpu_w = 16;
  for (const ValidationRow& r : report.rows) {
    model_w = std::max(model_w, static_cast<int>(r.m.model.size()));
    gpu_w = std::max(gpu_w, static_cast<int>(r.m.gpu.size()));
  }
  std::string out = absl::StrFormat(
      "%-10s %-7s %-18s %-*s %-*s %2s %-5s %5s %6s %5s %10s %10s %7s\n", "ID",
      "SPLIT", "KIND", model_w, "MODEL", gpu_w, "GPU", "TP", "W", "BATCH",
      "PROMPT", "OUT", "MEASURED", "PREDICTED", "ERROR");
  for (const ValidationRow& r : report.rows) {
    absl::StrAppendFormat(
        &out,
        "%-10s %-7s %-18s %-*s %-*s %2d %-5s %5d %6d %5d %10.4g "
        "%10.4g %+6.1f%%",
        r.m.id, r.m.split, r.m.kind, model_w, r.m.model, gpu_w, r.m.gpu, r.m.tp,
        PrecisionName(r.m.weights), r.m.batch, r.m.prompt, r.m.output,
        r.m.measured, r.predicted, 100 * r.error);
    if (r.shortfall_gib > 0) {
      absl::StrAppendFormat(&out, "  (does not fit: %.2f GiB short)",
                            r.shortfall_gib);
    }
    out += "\n";
  }
  out += "\nGROUP      SPLIT    ROWS  WITHIN-20%  WITHIN-25%  MEAN-ABS-ERROR\n";
  for (const GroupSummary& g : report.groups) {
    absl::StrAppendFormat(
        &out, "%-10s %-7s %5d  %4d (%3.0f%%)  %4d (%3.0f%%)  %6.1f%%\n",
        g.group, g.split, g.rows, g.within_20, 100.0 * g.within_20 / g.rows,
        g.within_25, 100.0 * g.within_25 / g.rows, 100 * g.mean_abs_error);
  }
  const auto short_rows = std::ranges::count_if(
      report.rows, [](const ValidationRow& r) { return r.shortfall_gib > 0; });
  if (short_rows > 0) {
    absl::StrAppendFormat(&out,
                          "\n%d row(s) ran on GPUs the memory model says are "
                          "too small (its headroom: gpu_memory_utilization, "
                          "runtime overhead); their speed is judged above\n",
                          short_rows);
  }
  return out;
}

}  // namespace pilotlight::model
