#include "controller/cmd/size_command.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "controller/api/size_report.h"
#include "controller/base/status_macros.h"
#include "controller/cmd/flags.h"
#include "controller/cmd/inputs.h"
#include "controller/model/calibration.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/model/sizing.h"
#include "controller/model/tuning_file.h"
#include "controller/model/validation.h"

namespace pilotlight::cmd {
namespace {

using model::Precision;

// What the flags set. The workload's lengths default from one another
// (the prompt from the context, the output from what is left), so they
// stay unset until BuildRequest; the engine terms override --tuning's.
struct SizeArgs {
  std::optional<std::string> model;
  std::optional<std::string> model_config;
  std::optional<std::string> precision;
  std::optional<std::string> kv_precision;
  std::optional<int> context;
  std::optional<int> prompt_tokens;
  std::optional<int> output_tokens;
  model::Workload workload;  // its concurrency
  model::Slo slo;
  std::optional<std::string> classes;
  CatalogInput catalog;
  TuningInput tuning;
  std::optional<std::string> calibration;
  bool json = false;
  bool all = false;
  // A custom model's shapes (--model custom).
  std::optional<double> params, active_params;
  std::optional<int> layers, hidden, heads, kv_heads, head_dim, vocab,
      max_context, experts, experts_per_token;
  // Engine terms.
  std::optional<double> mbu, mfu, gpu_memory_utilization, overhead_gib;
  std::optional<int> max_batch;
  // --validate.
  std::optional<std::string> validate, split, fit_on, save_tuning;
  bool fit = false;
};

// The custom model's flags, also refused for any other model.
constexpr const char* kCustomOnly[] = {
    "params",      "active-params", "layers",           "hidden",
    "heads",       "kv-heads",      "head-dim",         "vocab",
    "max-context", "experts",       "experts-per-token"};

void DeclareCustomModel(FlagSet& f, SizeArgs& a) {
  f.Add("params", &a.params, "N", "custom model: total parameters (e.g. 7e9)")
      .Add("active-params", &a.active_params, "N",
           "custom MoE model: parameters per token")
      .Add("layers", &a.layers, "N", "custom model: transformer layers")
      .Add("hidden", &a.hidden, "N", "custom model: hidden size")
      .Add("heads", &a.heads, "N", "custom model: attention (query) heads")
      .Add("kv-heads", &a.kv_heads, "N", "custom model: key/value heads")
      .Add("head-dim", &a.head_dim, "N",
           "custom model: head dimension (default hidden/heads)")
      .Add("vocab", &a.vocab, "N", "custom model: vocabulary size")
      .Add("max-context", &a.max_context, "N",
           "custom model: maximum context (default 131072)")
      .Add("experts", &a.experts, "N", "custom MoE model: experts per layer")
      .Add("experts-per-token", &a.experts_per_token, "N",
           "custom MoE model: experts routed per token");
}

// The engine terms, shown with the defaults the model was fitted to
// (docs/sizing.md).
void DeclareTuning(FlagSet& f, SizeArgs& a) {
  static const model::EngineTuning kTuning;
  f.Add("mbu", &a.mbu, "F",
        absl::StrFormat("decode memory-bandwidth utilisation (default %g)",
                        kTuning.memory_bandwidth_utilization))
      .Add("mfu", &a.mfu, "F",
           absl::StrFormat("prefill FLOPS utilisation, 16-bit (default %g)",
                           kTuning.model_flops_utilization))
      .Add("gpu-memory-utilization", &a.gpu_memory_utilization, "F",
           absl::StrFormat("fraction of GPU memory used (default %g)",
                           kTuning.gpu_memory_utilization))
      .Add("overhead-gib", &a.overhead_gib, "F",
           absl::StrFormat("runtime memory per GPU, GiB (default %g)",
                           kTuning.runtime_overhead_gib))
      .Add("max-batch", &a.max_batch, "N",
           absl::StrFormat("most sequences a replica batches (default %d)",
                           kTuning.max_batch));
  a.tuning.Declare(f,
                   "engine terms from a file (kind: SizingTuning, as "
                   "--save-tuning writes it; controller/model/tuning_file.h); "
                   "--mbu, --mfu and the other term flags override it");
  f.Add("calibration", &a.calibration, "FILE",
        "apply saved calibration factors (kind: SizingCalibration) to the "
        "classes they name");
}

void DeclareValidate(FlagSet& f, SizeArgs& a) {
  f.Add("validate", &a.validate, "FILE.csv",
        "predict every row of a measurements CSV and compare (see "
        "controller/model/data/measurements.csv; --catalog adds classes)")
      .Add("split", &a.split, "fit|holdout",
           "with --validate: only the rows of this split")
      .Switch("fit", &a.fit,
              "with --validate: fit the engine's efficiency terms to the rows "
              "and print them, then the rows at the fitted values")
      .Add("fit-on", &a.fit_on, "fit|holdout",
           "with --validate: fit on the rows of this split instead (implies "
           "--fit), then print the --split rows at the fitted values: fitted "
           "on some rows, judged on others, in one run")
      .Add("save-tuning", &a.save_tuning, "FILE",
           "with --fit or --fit-on: write the fitted terms to FILE, for "
           "--tuning");
}

FlagSet SizeFlags(SizeArgs& a) {
  FlagSet f(
      "pilotlight size",
      absl::StrCat(
          "usage: pilotlight size [--model NAME | --model-config FILE] "
          "[flags]\n"
          "       pilotlight size --validate FILE.csv [--catalog FILE] "
          "[--split S]\n\n"
          "Sizes one replica of a model on every GPU class of the catalog "
          "and\nrecommends the cheapest that meets the SLO; --validate holds "
          "the\nmodel against measurements instead.\n\nModels: ",
          model::PresetNames(),
          "\nExit codes: 0 recommendation found, 2 usage error, 3 nothing "
          "meets the request, 1 internal error.\n\nFlags:\n"));
  f.Add("model", &a.model, "NAME",
        "model preset, or \"custom\" (default llama-3.1-8b)")
      .Add("model-config", &a.model_config, "FILE",
           "model shapes from a Hugging Face config.json (any public model)")
      .Add("precision", &a.precision, "P",
           "weights: bf16 fp16 fp8 int8 int4 fp4 (default bf16)")
      .Add("kv-precision", &a.kv_precision, "P",
           "KV cache: bf16 fp16 fp8 (default: 16-bit)")
      .Add("context", &a.context, "N",
           "KV room reserved per sequence, tokens (default 8192, at most the "
           "model's)")
      .Add("prompt-tokens", &a.prompt_tokens, "N",
           "typical prompt length (default min(1024, context/2))")
      .Add("output-tokens", &a.output_tokens, "N",
           "typical output length (default min(256, rest of context))")
      .Add("concurrency", &a.workload.concurrency, "N",
           "concurrent sequences per replica")
      .Add("ttft", &a.slo.ttft, "DURATION", "time-to-first-token SLO")
      .Add("tpot", &a.slo.tpot, "DURATION", "time-per-output-token SLO")
      .Add("class", &a.classes, "A,B", "only these GPU classes");
  a.catalog.Declare(f);
  f.Switch("json", &a.json,
           "print one JSON object (proto/pilotlight/v1/sizing.proto)")
      .Switch("all", &a.all,
              "table: every tensor-parallel degree, not the best per class");
  DeclareCustomModel(f, a);
  DeclareTuning(f, a);
  DeclareValidate(f, a);
  return f;
}

absl::StatusOr<model::ModelProfile> CustomModel(const SizeArgs& a) {
  model::ModelProfile m;
  m.name = "custom";
  const std::pair<const char*, bool> required[] = {
      {"params", a.params.has_value()},     {"layers", a.layers.has_value()},
      {"hidden", a.hidden.has_value()},     {"heads", a.heads.has_value()},
      {"kv-heads", a.kv_heads.has_value()}, {"vocab", a.vocab.has_value()}};
  for (const auto& [flag, given] : required) {
    if (!given) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--model custom needs --", flag,
          " (and --params --layers --hidden --heads --kv-heads --vocab)"));
    }
  }
  m.params = *a.params;
  m.active_params = a.active_params.value_or(m.params);
  m.layers = *a.layers;
  m.hidden_size = *a.hidden;
  m.attention_heads = *a.heads;
  m.kv_heads = *a.kv_heads;
  m.head_dim = a.head_dim.value_or(
      m.attention_heads > 0 ? m.hidden_size / m.attention_heads : 0);
  m.vocab_size = *a.vocab;
  m.max_context_tokens = a.max_context.value_or(131072);
  m.experts = a.experts.value_or(0);
  m.experts_per_token = a.experts_per_token.value_or(0);
  PL_RETURN_IF_ERROR(model::ValidateProfile(m));
  return m;
}

// A profile from a Hugging Face config.json, named after the file's folder
// (config.json) or its stem.
absl::StatusOr<model::ModelProfile> ModelFromConfigFile(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open the model config"));
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::filesystem::path p(path);
  std::string name = p.stem().string();
  if (name == "config" && p.has_parent_path() &&
      !p.parent_path().filename().empty()) {
    name = p.parent_path().filename().string();
  }
  return model::ProfileFromHfConfig(text.str(), name);
}

// --tuning's file, then the term flags over it.
absl::StatusOr<model::EngineTuning> Tuning(const SizeArgs& a,
                                           const model::EngineTuning& base) {
  PL_ASSIGN_OR_RETURN(model::EngineTuning t, a.tuning.Load(base));
  t.memory_bandwidth_utilization =
      a.mbu.value_or(t.memory_bandwidth_utilization);
  t.model_flops_utilization = a.mfu.value_or(t.model_flops_utilization);
  t.gpu_memory_utilization =
      a.gpu_memory_utilization.value_or(t.gpu_memory_utilization);
  t.runtime_overhead_gib = a.overhead_gib.value_or(t.runtime_overhead_gib);
  t.max_batch = a.max_batch.value_or(t.max_batch);
  return t;
}

// The model: a preset, a config.json or a custom one, never two.
absl::StatusOr<model::ModelProfile> Model(const SizeArgs& a,
                                          const FlagSet& flags) {
  if (a.model_config) {
    if (a.model) {
      return absl::InvalidArgumentError(
          "--model and --model-config both name the model; give one");
    }
    return ModelFromConfigFile(*a.model_config);
  }
  const std::string name = a.model.value_or("llama-3.1-8b");
  if (name == "custom") {
    return CustomModel(a);
  }
  for (const char* custom_only : kCustomOnly) {
    if (flags.Given(custom_only)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", custom_only, " describes a custom model; use --model custom"));
    }
  }
  return model::FindPreset(name);
}

absl::StatusOr<model::SizingRequest> BuildRequest(const SizeArgs& a,
                                                  const FlagSet& flags) {
  model::SizingRequest r;
  PL_ASSIGN_OR_RETURN(r.model, Model(a, flags));
  if (a.precision) {
    PL_ASSIGN_OR_RETURN(r.weights, model::ParsePrecision(*a.precision));
  }
  r.kv = r.weights == Precision::kFp16 ? Precision::kFp16 : Precision::kBf16;
  if (a.kv_precision) {
    PL_ASSIGN_OR_RETURN(r.kv, model::ParsePrecision(*a.kv_precision));
    if (r.kv == Precision::kInt8 || r.kv == Precision::kInt4) {
      return absl::InvalidArgumentError(
          absl::StrCat("--kv-precision ", *a.kv_precision,
                       " is not a KV-cache format (use bf16, fp16 or fp8)"));
    }
  }
  model::Workload& w = r.workload;
  w = a.workload;
  w.context_tokens =
      a.context.value_or(std::min(8192, r.model.max_context_tokens));
  w.prompt_tokens =
      a.prompt_tokens.value_or(std::min(1024, w.context_tokens / 2));
  w.output_tokens = a.output_tokens.value_or(
      std::min(256, w.context_tokens - w.prompt_tokens));
  r.slo = a.slo;
  PL_ASSIGN_OR_RETURN(r.tuning, Tuning(a, r.tuning));
  if (a.calibration) {
    PL_ASSIGN_OR_RETURN(const std::string text,
                        ReadFlagFile(*a.calibration, "calibration"));
    PL_ASSIGN_OR_RETURN(std::vector<model::SavedCalibration> saved,
                        model::ParseCalibration(text, *a.calibration));
    for (model::SavedCalibration& c : saved) {
      if (c.model == r.model.name) {
        r.calibrations.push_back(std::move(c));
      }
    }
  }
  if (a.classes) {
    for (absl::string_view c :
         absl::StrSplit(*a.classes, ',', absl::SkipEmpty())) {
      r.gpu_classes.emplace_back(c);
    }
  }
  PL_RETURN_IF_ERROR(model::ValidateSizingRequest(r));
  return r;
}

// For the default table: the row that best represents each class.
std::vector<const model::SizingOption*> BestPerClass(
    const model::SizingReport& rep) {
  auto rank = [](const model::SizingOption& o) {
    switch (o.verdict) {
      case model::Verdict::kRecommended:
        return 0;
      case model::Verdict::kMeetsSlo:
        return 1;
      case model::Verdict::kMissesSlo:
        return 2;
      case model::Verdict::kDoesNotFit:
        return 3;
      case model::Verdict::kUnsupported:
        return 4;
    }
    return 4;
  };
  std::vector<const model::SizingOption*> rows;
  std::map<std::string, size_t> index;
  for (const model::SizingOption& o : rep.options) {
    auto [it, inserted] = index.try_emplace(o.gpu_class, rows.size());
    if (inserted) {
      rows.push_back(&o);
      continue;
    }
    const model::SizingOption*& cur = rows[it->second];
    const int a = rank(o);
    const int b = rank(*cur);
    // Within a verdict the first (smallest TP) wins, except that a larger TP
    // that serves more concurrency beats a smaller one that misses.
    if (a < b ||
        (a == b && a == 2 && o.max_concurrency > cur->max_concurrency) ||
        (a == b && a == 3 && o.shortfall_gib < cur->shortfall_gib)) {
      cur = &o;
    }
  }
  return rows;
}

// What a replica that fits takes to start cold (a free node, the image
// cached) and to wake from sleep, and what it costs asleep on a shared pool
// GPU (the sleep model: docs/sizing.md).
void PrintStartAndSleep(const std::vector<const model::SizingOption*>& rows,
                        std::ostream& out) {
  bool any = false;
  for (const model::SizingOption* o : rows) {
    any = any || o->fits;
  }
  if (!any) {
    return;
  }
  out << absl::StrFormat("\n%-15s %2s %7s %7s %12s %10s\n", "CLASS", "TP",
                         "COLD-S", "WAKE-S", "ASLEEP/GPU", "ASLEEP-$/H");
  for (const model::SizingOption* o : rows) {
    if (!o->fits) {
      continue;
    }
    if (o->sleeping_per_gpu > 0) {
      out << absl::StrFormat("%-15s %2d %7.1f %7.2f %12d %10.2f\n",
                             o->gpu_class, o->tensor_parallel, o->cold_start_s,
                             o->wake_s, o->sleeping_per_gpu,
                             o->asleep_price_per_hour);
    } else {
      out << absl::StrFormat("%-15s %2d %7.1f %7.2f %12s %10s\n", o->gpu_class,
                             o->tensor_parallel, o->cold_start_s, o->wake_s,
                             "0", "-");
    }
  }
  out << "(cold start: a free node, the image cached; asleep: weights in the "
         "node's memory, the pool GPU's price shared by the engines it "
         "holds)\n";
}

void PrintTable(const model::SizingRequest& r, const model::SizingReport& rep,
                bool all, std::ostream& out) {
  out << absl::StrFormat(
      "%s: %s weights, %s KV cache; context %d, prompt %d, output %d tokens; "
      "%d concurrent; SLO TTFT %s, TPOT %s\n",
      rep.model_name, model::PrecisionName(r.weights),
      model::PrecisionName(r.kv), r.workload.context_tokens,
      r.workload.prompt_tokens, r.workload.output_tokens,
      r.workload.concurrency, absl::FormatDuration(r.slo.ttft),
      absl::FormatDuration(r.slo.tpot));
  out << absl::StrFormat(
      "weights %.2f GB (%.2f GiB), KV cache %.1f KiB per token\n\n",
      rep.weights_bytes / 1e9, rep.weights_bytes / model::kGiB,
      rep.kv_bytes_per_token / 1024.0);
  out << absl::StrFormat("%-15s %2s %-4s %8s %9s %7s %7s %8s %9s  %s\n",
                         "CLASS", "TP", "FITS", "MAX-CONC", "TOKENS/S",
                         "TTFT-S", "TPOT-S", "$/H", "$/1M-TOK", "VERDICT");
  std::vector<const model::SizingOption*> rows;
  if (all) {
    for (const model::SizingOption& o : rep.options) {
      rows.push_back(&o);
    }
  } else {
    rows = BestPerClass(rep);
  }
  bool any_calibrated = false;
  for (const model::SizingOption* o : rows) {
    any_calibrated = any_calibrated || o->calibrated;
    const std::string cls =
        o->calibrated ? absl::StrCat(o->gpu_class, "*") : o->gpu_class;
    const std::string verdict =
        o->reason.empty()
            ? std::string(model::VerdictName(o->verdict))
            : absl::StrCat(model::VerdictName(o->verdict), ": ", o->reason);
    if (o->fits) {
      out << absl::StrFormat(
          "%-15s %2d %-4s %8d %9.0f %7.3f %7.3f %8.2f %9.2f  %s\n", cls,
          o->tensor_parallel, "yes", o->max_concurrency, o->decode_tokens_per_s,
          o->ttft_s, o->tpot_s, o->price_per_hour, o->usd_per_million_tokens,
          verdict);
    } else {
      out << absl::StrFormat("%-15s %2d %-4s %8s %9s %7s %7s %8.2f %9s  %s\n",
                             cls, o->tensor_parallel, "no", "-", "-", "-", "-",
                             o->price_per_hour, "-", verdict);
    }
  }
  if (any_calibrated) {
    out << "* calibrated: the class's decode and prefill times are scaled by "
           "the --calibration file's factors\n";
  }
  PrintStartAndSleep(rows, out);
  out << "\n" << rep.summary << "\n";
}

// The rows of the measurements CSV of split `split` (fit or holdout);
// every row without one.
absl::StatusOr<std::vector<model::Measurement>> RowsOf(
    const std::vector<model::Measurement>& rows,
    const std::optional<std::string>& split, absl::string_view flag,
    absl::string_view csv_path) {
  std::vector<model::Measurement> kept = rows;
  if (!split) {
    return kept;
  }
  if (*split != "fit" && *split != "holdout") {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " ", *split, ": expected fit or holdout"));
  }
  std::erase_if(kept,
                [&](const model::Measurement& m) { return m.split != *split; });
  if (kept.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(csv_path, " has no rows of split ", *split));
  }
  return kept;
}

// --fit or --fit-on: the engine's terms fitted to `rows`, printed (and
// written to --save-tuning's file).
absl::StatusOr<model::EngineTuning> Fit(
    const SizeArgs& a, const std::vector<model::Measurement>& rows,
    const model::ModelResolver& resolve, const model::Catalog& catalog,
    const model::EngineTuning& start, std::ostream& out) {
  PL_ASSIGN_OR_RETURN(const model::FitResult fit,
                      model::FitTuning(rows, resolve, catalog, start));
  out << absl::StrFormat(
      "fitted on %zu rows: RMS of ln(predicted/measured) %.4f -> %.4f\n%s\n",
      rows.size(), fit.before, fit.after, model::FormatTuning(fit.tuning));
  if (a.save_tuning) {
    std::ofstream file(*a.save_tuning);
    file << model::FormatTuningFile(fit.tuning);
    file.close();
    if (!file) {
      return absl::PermissionDeniedError(absl::StrCat(
          "--save-tuning ", *a.save_tuning, ": cannot write the file"));
    }
    out << "fitted terms written to " << *a.save_tuning << " (size --tuning "
        << *a.save_tuning << ")\n";
  }
  return fit.tuning;
}

// `size --validate FILE.csv`: the built-in catalog plus --catalog's classes,
// models by preset name or config.json path (relative to the CSV).
absl::Status Validate(const SizeArgs& a, std::ostream& out) {
  const std::string& csv_path = *a.validate;
  std::ifstream in(csv_path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(csv_path, ": cannot open the measurements file"));
  }
  std::stringstream text;
  text << in.rdbuf();
  PL_ASSIGN_OR_RETURN(const std::vector<model::Measurement> rows,
                      model::ParseMeasurements(text.str(), csv_path));
  PL_ASSIGN_OR_RETURN(const std::vector<model::Measurement> shown,
                      RowsOf(rows, a.split, "split", csv_path));
  PL_ASSIGN_OR_RETURN(
      const std::vector<model::Measurement> fit_rows,
      a.fit_on ? RowsOf(rows, a.fit_on, "fit-on", csv_path) : shown);
  PL_ASSIGN_OR_RETURN(const model::Catalog builtin, model::Catalog::Default());
  model::Catalog catalog = builtin;
  if (a.catalog.path) {
    PL_ASSIGN_OR_RETURN(const model::Catalog extra, a.catalog.Load());
    catalog = builtin.WithClasses(extra);
  }
  const std::filesystem::path dir =
      std::filesystem::path(csv_path).parent_path();
  const model::ModelResolver resolve =
      [&](const std::string& name) -> absl::StatusOr<model::ModelProfile> {
    if (name.ends_with(".json")) {
      return ModelFromConfigFile((dir / name).string());
    }
    return model::FindPreset(name);
  };
  PL_ASSIGN_OR_RETURN(model::EngineTuning tuning,
                      Tuning(a, model::EngineTuning{}));
  const bool fitting = a.fit || a.fit_on;
  if (a.save_tuning && !fitting) {
    return absl::InvalidArgumentError(
        "--save-tuning writes what --fit or --fit-on finds; give one");
  }
  if (fitting) {
    PL_ASSIGN_OR_RETURN(tuning,
                        Fit(a, fit_rows, resolve, catalog, tuning, out));
  }
  PL_ASSIGN_OR_RETURN(const model::ValidationReport report,
                      model::Validate(shown, resolve, catalog, tuning));
  out << model::FormatValidation(report);
  return absl::OkStatus();
}

}  // namespace

int RunSize(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  SizeArgs a;
  FlagSet flags = SizeFlags(a);
  if (std::optional<int> exit = flags.ParseOrExit(args, out, err)) {
    return *exit;
  }
  const auto fail = [&](const absl::Status& st, int code = kExitUsage) {
    err << "pilotlight size: " << st.message() << "\n";
    return code;
  };
  if (a.validate) {
    const absl::Status st = Validate(a, out);
    if (!st.ok()) {
      err << "pilotlight size --validate: " << st.message() << "\n";
      return kExitUsage;
    }
    return kExitOk;
  }
  absl::StatusOr<model::SizingRequest> request = BuildRequest(a, flags);
  if (!request.ok()) {
    return fail(request.status());
  }
  absl::StatusOr<model::Catalog> catalog = a.catalog.Load();
  if (!catalog.ok()) {
    // The built-in catalog failing to parse is our bug, not the user's.
    return fail(catalog.status(), a.catalog.path ? kExitUsage : kExitInternal);
  }
  absl::StatusOr<model::SizingReport> report = model::Size(*request, *catalog);
  if (!report.ok()) {
    return fail(report.status(),
                report.status().code() == absl::StatusCode::kInternal
                    ? kExitInternal
                    : kExitUsage);
  }
  if (a.json) {
    absl::StatusOr<std::string> json = api::ToJson(api::ToProto(*report));
    if (!json.ok()) {
      return fail(json.status(), kExitInternal);
    }
    out << *json << "\n";
  } else {
    PrintTable(*request, *report, a.all, out);
  }
  return report->recommended.has_value() ? kExitOk : kExitNoOption;
}

}  // namespace pilotlight::cmd
