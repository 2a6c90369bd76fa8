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
#include "controller/model/calibration.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/model/sizing.h"
#include "controller/model/tuning_file.h"
#include "controller/model/validation.h"

namespace pilotlight::cmd {
namespace {

using model::Precision;

const std::vector<FlagSpec>& SizeFlags() {
  static const model::EngineTuning kTuning;
  static const auto* specs = new std::vector<FlagSpec>{
      {"model", false, "NAME",
       "model preset, or \"custom\" (default llama-3.1-8b)"},
      {"precision", false, "P",
       "weights: bf16 fp16 fp8 int8 int4 fp4 (default bf16)"},
      {"kv-precision", false, "P", "KV cache: bf16 fp16 fp8 (default: 16-bit)"},
      {"context", false, "N",
       "KV room reserved per sequence, tokens (default 8192)"},
      {"prompt-tokens", false, "N",
       "typical prompt length (default min(1024, context/2))"},
      {"output-tokens", false, "N",
       "typical output length (default min(256, rest of context))"},
      {"concurrency", false, "N",
       "concurrent sequences per replica (default 1)"},
      {"ttft", false, "DURATION", "time-to-first-token SLO (default 2s)"},
      {"tpot", false, "DURATION", "time-per-output-token SLO (default 80ms)"},
      {"class", false, "A,B", "only these GPU classes"},
      {"catalog", false, "FILE",
       "GPU catalog YAML (default: the built-in one)"},
      {"json", true, "",
       "print one JSON object (proto/pilotlight/v1/sizing.proto)"},
      {"all", true, "",
       "table: every tensor-parallel degree, not the best per class"},
      {"params", false, "N", "custom model: total parameters (e.g. 7e9)"},
      {"active-params", false, "N", "custom MoE model: parameters per token"},
      {"layers", false, "N", "custom model: transformer layers"},
      {"hidden", false, "N", "custom model: hidden size"},
      {"heads", false, "N", "custom model: attention (query) heads"},
      {"kv-heads", false, "N", "custom model: key/value heads"},
      {"head-dim", false, "N",
       "custom model: head dimension (default hidden/heads)"},
      {"vocab", false, "N", "custom model: vocabulary size"},
      {"max-context", false, "N",
       "custom model: maximum context (default 131072)"},
      {"experts", false, "N", "custom MoE model: experts per layer"},
      {"experts-per-token", false, "N",
       "custom MoE model: experts routed per token"},
      // Defaults as the model has them (fitted: docs/sizing.md).
      {"mbu", false, "F",
       absl::StrFormat("decode memory-bandwidth utilisation (default %g)",
                       kTuning.memory_bandwidth_utilization)},
      {"mfu", false, "F",
       absl::StrFormat("prefill FLOPS utilisation, 16-bit (default %g)",
                       kTuning.model_flops_utilization)},
      {"gpu-memory-utilization", false, "F",
       absl::StrFormat("fraction of GPU memory used (default %g)",
                       kTuning.gpu_memory_utilization)},
      {"overhead-gib", false, "F",
       absl::StrFormat("runtime memory per GPU, GiB (default %g)",
                       kTuning.runtime_overhead_gib)},
      {"max-batch", false, "N",
       absl::StrFormat("most sequences a replica batches (default %d)",
                       kTuning.max_batch)},
      {"tuning", false, "FILE",
       "engine terms from a file (kind: SizingTuning, as --save-tuning "
       "writes it; controller/model/tuning_file.h); --mbu, --mfu and the "
       "other term flags override it"},
      {"calibration", false, "FILE",
       "apply saved calibration factors (kind: SizingCalibration) to the "
       "classes they name"},
      {"model-config", false, "FILE",
       "model shapes from a Hugging Face config.json (any public model)"},
      {"validate", false, "FILE.csv",
       "predict every row of a measurements CSV and compare (see "
       "controller/model/data/measurements.csv; --catalog adds classes)"},
      {"split", false, "fit|holdout",
       "with --validate: only the rows of this split"},
      {"fit", true, "",
       "with --validate: fit the engine's efficiency terms to the rows "
       "and print them, then the rows at the fitted values"},
      {"fit-on", false, "fit|holdout",
       "with --validate: fit on the rows of this split instead (implies "
       "--fit), then print the --split rows at the fitted values: fitted "
       "on some rows, judged on others, in one run"},
      {"save-tuning", false, "FILE",
       "with --fit or --fit-on: write the fitted terms to FILE, for "
       "--tuning"},
      {"help", true, "", "show this help"},
  };
  return *specs;
}

std::string SizeUsage() {
  return absl::StrCat(
      "usage: pilotlight size [--model NAME | --model-config FILE] [flags]\n"
      "       pilotlight size --validate FILE.csv [--catalog FILE] [--split "
      "S]\n\n"
      "Sizes one replica of a model on every GPU class of the catalog and\n"
      "recommends the cheapest that meets the SLO; --validate holds the\n"
      "model against measurements instead.\n\n"
      "Flags:\n",
      FlagsHelp(SizeFlags()), "\nModels: ", model::PresetNames(),
      "\nExit codes: 0 recommendation found, 2 usage error, 3 nothing meets "
      "the request, 1 internal error.\n");
}

absl::StatusOr<model::ModelProfile> CustomModel(const ParsedFlags& f) {
  model::ModelProfile m;
  m.name = "custom";
  m.max_context_tokens = 131072;
  for (const char* required :
       {"params", "layers", "hidden", "heads", "kv-heads", "vocab"}) {
    if (!f.Has(required)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--model custom needs --", required,
          " (and --params --layers --hidden --heads --kv-heads --vocab)"));
    }
  }
  PL_RETURN_IF_ERROR(Set(f.Double("params"), m.params));
  m.active_params = m.params;
  PL_RETURN_IF_ERROR(Set(f.Double("active-params"), m.active_params));
  PL_RETURN_IF_ERROR(Set(f.Int("layers"), m.layers));
  PL_RETURN_IF_ERROR(Set(f.Int("hidden"), m.hidden_size));
  PL_RETURN_IF_ERROR(Set(f.Int("heads"), m.attention_heads));
  PL_RETURN_IF_ERROR(Set(f.Int("kv-heads"), m.kv_heads));
  if (m.attention_heads > 0) {
    m.head_dim = m.hidden_size / m.attention_heads;
  }
  PL_RETURN_IF_ERROR(Set(f.Int("head-dim"), m.head_dim));
  PL_RETURN_IF_ERROR(Set(f.Int("vocab"), m.vocab_size));
  PL_RETURN_IF_ERROR(Set(f.Int("max-context"), m.max_context_tokens));
  PL_RETURN_IF_ERROR(Set(f.Int("experts"), m.experts));
  PL_RETURN_IF_ERROR(Set(f.Int("experts-per-token"), m.experts_per_token));
  PL_RETURN_IF_ERROR(model::ValidateProfile(m));
  return m;
}

std::string ReadWhole(std::ifstream& in) {
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
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
  const std::filesystem::path p(path);
  std::string name = p.stem().string();
  if (name == "config" && p.has_parent_path() &&
      !p.parent_path().filename().empty()) {
    name = p.parent_path().filename().string();
  }
  return model::ProfileFromHfConfig(ReadWhole(in), name);
}

absl::Status ApplyTuningFlags(const ParsedFlags& f, model::EngineTuning& t) {
  PL_ASSIGN_OR_RETURN(t, LoadTuning(f, t));
  PL_RETURN_IF_ERROR(Set(f.Double("mbu"), t.memory_bandwidth_utilization));
  PL_RETURN_IF_ERROR(Set(f.Double("mfu"), t.model_flops_utilization));
  PL_RETURN_IF_ERROR(
      Set(f.Double("gpu-memory-utilization"), t.gpu_memory_utilization));
  PL_RETURN_IF_ERROR(Set(f.Double("overhead-gib"), t.runtime_overhead_gib));
  PL_RETURN_IF_ERROR(Set(f.Int("max-batch"), t.max_batch));
  return absl::OkStatus();
}

absl::StatusOr<model::SizingRequest> BuildRequest(const ParsedFlags& f) {
  model::SizingRequest r;
  const std::string name = f.String("model").value_or("llama-3.1-8b");
  if (std::optional<std::string> config = f.String("model-config")) {
    if (f.Has("model")) {
      return absl::InvalidArgumentError(
          "--model and --model-config both name the model; give one");
    }
    PL_ASSIGN_OR_RETURN(r.model, ModelFromConfigFile(*config));
  } else if (name == "custom") {
    PL_ASSIGN_OR_RETURN(r.model, CustomModel(f));
  } else {
    for (const char* custom_only :
         {"params", "active-params", "layers", "hidden", "heads", "kv-heads",
          "head-dim", "vocab", "max-context", "experts", "experts-per-token"}) {
      if (f.Has(custom_only)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", custom_only,
                         " describes a custom model; use --model custom"));
      }
    }
    PL_ASSIGN_OR_RETURN(r.model, model::FindPreset(name));
  }
  if (std::optional<std::string> p = f.String("precision")) {
    PL_ASSIGN_OR_RETURN(r.weights, model::ParsePrecision(*p));
  }
  r.kv = r.weights == Precision::kFp16 ? Precision::kFp16 : Precision::kBf16;
  if (std::optional<std::string> p = f.String("kv-precision")) {
    PL_ASSIGN_OR_RETURN(r.kv, model::ParsePrecision(*p));
    if (r.kv == Precision::kInt8 || r.kv == Precision::kInt4) {
      return absl::InvalidArgumentError(
          absl::StrCat("--kv-precision ", *p,
                       " is not a KV-cache format (use bf16, fp16 or fp8)"));
    }
  }

  model::Workload& w = r.workload;
  w.context_tokens = std::min(8192, r.model.max_context_tokens);
  PL_RETURN_IF_ERROR(Set(f.Int("context"), w.context_tokens));
  w.prompt_tokens = std::min(1024, w.context_tokens / 2);
  PL_RETURN_IF_ERROR(Set(f.Int("prompt-tokens"), w.prompt_tokens));
  w.output_tokens = std::min(256, w.context_tokens - w.prompt_tokens);
  PL_RETURN_IF_ERROR(Set(f.Int("output-tokens"), w.output_tokens));
  PL_RETURN_IF_ERROR(Set(f.Int("concurrency"), w.concurrency));
  PL_RETURN_IF_ERROR(Set(f.Duration("ttft"), r.slo.ttft));
  PL_RETURN_IF_ERROR(Set(f.Duration("tpot"), r.slo.tpot));

  PL_RETURN_IF_ERROR(ApplyTuningFlags(f, r.tuning));
  if (std::optional<std::string> path = f.String("calibration")) {
    std::ifstream in(*path);
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat("--calibration ", *path, ": cannot open the file"));
    }
    PL_ASSIGN_OR_RETURN(std::vector<model::SavedCalibration> saved,
                        model::ParseCalibration(ReadWhole(in), *path));
    for (model::SavedCalibration& c : saved) {
      if (c.model == r.model.name) {
        r.calibrations.push_back(std::move(c));
      }
    }
  }

  if (std::optional<std::string> classes = f.String("class")) {
    for (absl::string_view c :
         absl::StrSplit(*classes, ',', absl::SkipEmpty())) {
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
  out << "\n" << rep.summary << "\n";
}

}  // namespace

absl::StatusOr<model::Catalog> LoadCatalog(const ParsedFlags& f) {
  std::optional<std::string> path = f.String("catalog");
  if (!path) {
    return model::Catalog::Default();
  }
  std::ifstream in(*path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--catalog ", *path, ": cannot open the file"));
  }
  return model::Catalog::FromYaml(ReadWhole(in), *path);
}

absl::StatusOr<model::EngineTuning> LoadTuning(
    const ParsedFlags& f, const model::EngineTuning& base) {
  const std::optional<std::string> path = f.String("tuning");
  if (!path) {
    return base;
  }
  std::ifstream in(*path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--tuning ", *path, ": cannot open the file"));
  }
  return model::ParseTuning(ReadWhole(in), *path, base);
}

namespace {

// `size --validate FILE.csv`: the built-in catalog plus --catalog's classes,
// models by preset name or config.json path (relative to the CSV).
int RunValidate(const ParsedFlags& f, std::ostream& out, std::ostream& err) {
  const std::string csv_path = *f.String("validate");
  auto fail = [&](const absl::Status& s) {
    err << "pilotlight size --validate: " << s.message() << "\n";
    return kExitUsage;
  };
  std::ifstream in(csv_path);
  if (!in) {
    return fail(absl::NotFoundError(
        absl::StrCat(csv_path, ": cannot open the measurements file")));
  }
  absl::StatusOr<std::vector<model::Measurement>> rows =
      model::ParseMeasurements(ReadWhole(in), csv_path);
  if (!rows.ok()) {
    return fail(rows.status());
  }
  // The rows of one split; every row when the flag is absent.
  auto only =
      [&](const char* flag) -> absl::StatusOr<std::vector<model::Measurement>> {
    std::vector<model::Measurement> kept = *rows;
    std::optional<std::string> split = f.String(flag);
    if (!split) {
      return kept;
    }
    if (*split != "fit" && *split != "holdout") {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, " ", *split, ": expected fit or holdout"));
    }
    std::erase_if(
        kept, [&](const model::Measurement& m) { return m.split != *split; });
    if (kept.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(csv_path, " has no rows of split ", *split));
    }
    return kept;
  };
  absl::StatusOr<std::vector<model::Measurement>> shown = only("split");
  if (!shown.ok()) {
    return fail(shown.status());
  }
  absl::StatusOr<std::vector<model::Measurement>> fit_rows =
      f.Has("fit-on") ? only("fit-on") : shown;
  if (!fit_rows.ok()) {
    return fail(fit_rows.status());
  }
  absl::StatusOr<model::Catalog> builtin = model::Catalog::Default();
  if (!builtin.ok()) {
    err << "pilotlight size: " << builtin.status().message() << "\n";
    return kExitInternal;
  }
  model::Catalog catalog = *builtin;
  if (f.Has("catalog")) {
    absl::StatusOr<model::Catalog> extra = LoadCatalog(f);
    if (!extra.ok()) {
      return fail(extra.status());
    }
    catalog = builtin->WithClasses(*extra);
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
  model::EngineTuning tuning;
  if (absl::Status s = ApplyTuningFlags(f, tuning); !s.ok()) {
    return fail(s);
  }
  const bool fitting = f.Bool("fit") || f.Has("fit-on");
  if (f.Has("save-tuning") && !fitting) {
    return fail(absl::InvalidArgumentError(
        "--save-tuning writes what --fit or --fit-on finds; give one"));
  }
  if (fitting) {
    absl::StatusOr<model::FitResult> fit =
        model::FitTuning(*fit_rows, resolve, catalog, tuning);
    if (!fit.ok()) {
      return fail(fit.status());
    }
    out << absl::StrFormat(
        "fitted on %zu rows: RMS of ln(predicted/measured) %.4f -> %.4f\n%s\n",
        fit_rows->size(), fit->before, fit->after,
        model::FormatTuning(fit->tuning));
    tuning = fit->tuning;
    if (std::optional<std::string> path = f.String("save-tuning")) {
      std::ofstream file(*path);
      file << model::FormatTuningFile(tuning);
      file.close();
      if (!file) {
        return fail(absl::PermissionDeniedError(
            absl::StrCat("--save-tuning ", *path, ": cannot write the file")));
      }
      out << "fitted terms written to " << *path << " (size --tuning " << *path
          << ")\n";
    }
  }
  absl::StatusOr<model::ValidationReport> report =
      model::Validate(*shown, resolve, catalog, tuning);
  if (!report.ok()) {
    return fail(report.status());
  }
  out << model::FormatValidation(*report);
  return kExitOk;
}

}  // namespace

int RunSize(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, SizeFlags());
  if (!flags.ok()) {
    err << "pilotlight size: " << flags.status().message() << "\n"
        << "run 'pilotlight size --help' for the flags\n";
    return kExitUsage;
  }
  if (flags->Bool("help")) {
    out << SizeUsage();
    return kExitOk;
  }
  if (flags->Has("validate")) {
    return RunValidate(*flags, out, err);
  }
  absl::StatusOr<model::SizingRequest> request = BuildRequest(*flags);
  if (!request.ok()) {
    err << "pilotlight size: " << request.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<model::Catalog> catalog = LoadCatalog(*flags);
  if (!catalog.ok()) {
    err << "pilotlight size: " << catalog.status().message() << "\n";
    // The built-in catalog failing to parse is our bug, not the user's.
    return flags->Has("catalog") ? kExitUsage : kExitInternal;
  }
  absl::StatusOr<model::SizingReport> report = model::Size(*request, *catalog);
  if (!report.ok()) {
    err << "pilotlight size: " << report.status().message() << "\n";
    return report.status().code() == absl::StatusCode::kInternal ? kExitInternal
                                                                 : kExitUsage;
  }
  if (flags->Bool("json")) {
    absl::StatusOr<std::string> json = api::ToJson(api::ToProto(*report));
    if (!json.ok()) {
      err << "pilotlight size: " << json.status().message() << "\n";
      return kExitInternal;
    }
    out << *json << "\n";
  } else {
    PrintTable(*request, *report, flags->Bool("all"), out);
  }
  return report->recommended.has_value() ? kExitOk : kExitNoOption;
}

}  // namespace pilotlight::cmd
