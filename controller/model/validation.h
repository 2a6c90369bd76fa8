// Holds the sizing model against measurements: a CSV of published (or your
// own) figures, each row one number under stated conditions, predicted by
// ReplicaModel and compared. `pilotlight size --validate FILE.csv` prints
// it; tests/model/measurements_test.cc holds the shipped set
// (controller/model/data/measurements.csv) to the goals. Pure code: the
// caller reads the files.
//
// CSV columns (a header row names them; order free; '#' lines are comments):
//   id        a name for the row
//   split     fit | holdout: whether the model's defaults were fitted to it
//   kind      decode_tps    one sequence's decode tokens/s at `batch`
//             itl_ms        inter-token latency at `batch`, ms
//             ttft_ms       time to first token of one `prompt`, ms
//             batch_decode_tps  aggregate decode tokens/s of `batch`
//                           sequences decoding together (no prefill)
//             throughput_tps    output tokens/s of a closed loop of `batch`
//                           clients (continuous batching; vLLM bench
//                           --max-concurrency)
//             static_tps    output tokens/s of one static batch (prefill all,
//                           then decode all; offline benchmarks)
//             static_tps_per_gpu  the same divided by tp
//             e2e_ms        one request's latency at `batch`, ms
//   model     a preset name, or a Hugging Face config.json path (relative to
//             the CSV's folder)
//   gpu       a GPU class of the catalog
//   tp        tensor-parallel degree
//   weights   bf16 fp16 fp8 int8 int4 fp4
//   kv        bf16 fp16 fp8
//   group     int4 group size (empty: the tuning's default)
//   batch     concurrent sequences
//   prompt    prompt tokens
//   output    output tokens
//   path      server (an HTTP server: TTFT pays the request overhead) or
//             offline
//   measured  the figure, in the kind's unit
//   source    where it was published and under what conditions
//
// Example:
//   absl::StatusOr<std::vector<Measurement>> rows =
//       ParseMeasurements(csv_text, "mine.csv");
//   absl::StatusOr<ValidationReport> report =
//       Validate(*rows, resolve_model, catalog, EngineTuning{});
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/model/precision.h"
#include "controller/model/sizing.h"

namespace pilotlight::model {

struct Measurement {
  std::string id;
  std::string split;  // "fit" or "holdout"
  std::string kind;
  std::string model;
  std::string gpu;
  int tp = 1;
  Precision weights = Precision::kBf16;
  Precision kv = Precision::kBf16;
  int group = 0;  // 0: the tuning's default
  int batch = 1;
  int prompt = 1;
  int output = 1;
  bool server = false;
  double measured = 0;
  std::string source;
  int line = 0;  // in the CSV, for messages
};

// Parses the CSV; errors name the file, the line and the column.
absl::StatusOr<std::vector<Measurement>> ParseMeasurements(
    absl::string_view csv, absl::string_view origin);

// The goal group a row counts in: "decode-b1" (decode_tps and itl_ms at
// batch 1), "ttft", "batch" (throughput and decode at a stated batch > 1)
// or "e2e".
std::string GoalGroup(const Measurement& m);

struct ValidationRow {
  Measurement m;
  double predicted = 0;
  double error = 0;  // predicted / measured - 1
  // > 0: the memory model says the shape does not fit (GiB short per GPU),
  // though the row ran; a miss of the memory model, the speed still judged.
  double shortfall_gib = 0;
};

struct GroupSummary {
  std::string group;
  std::string split;
  int rows = 0;
  int within_20 = 0;
  int within_25 = 0;
  double mean_abs_error = 0;
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  std::vector<GroupSummary> groups;  // per (group, split), then per split
};

using ModelResolver =
    std::function<absl::StatusOr<ModelProfile>(const std::string&)>;

// Predicts every row with `tuning` (the row's group size and path applied).
// A row the model cannot express (unknown GPU class, a precision the class
// lacks, weights beyond the GPUs' memory) is an error naming the row; a
// shape within the memory but beyond the usable budget is predicted and
// flagged (ValidationRow::shortfall_gib).
absl::StatusOr<ValidationReport> Validate(const std::vector<Measurement>& rows,
                                          const ModelResolver& resolve,
                                          const Catalog& catalog,
                                          const EngineTuning& tuning);

// Fits EngineTuning's efficiency terms to `rows` (coordinate descent over a
// bounded grid, minimising the root mean square of ln(predicted /
// measured)), starting from `start`: MBU, the 8- and 4-bit weight-read
// efficiencies, the 16- and 8-bit prefill MFU, the overlap exponent, the
// step overhead and the NVLink all-reduce latency. The request overhead,
// fp4 MFU and PCIe all-reduce latency are not fitted (no shipped row
// measures them); terms no row exercises do not move. `size --validate FILE
// --fit` prints the result; the defaults in sizing.h came from it on the
// shipped set's "fit" rows.
struct FitResult {
  EngineTuning tuning;
  double before = 0;  // RMS of ln(predicted / measured) at `start`
  double after = 0;
};
absl::StatusOr<FitResult> FitTuning(const std::vector<Measurement>& rows,
                                    const ModelResolver& resolve,
                                    const Catalog& catalog,
                                    const EngineTuning& start);

// The fitted terms, one per line, as C++ initialisers would set them.
std::string FormatTuning(const EngineTuning& t);

// The table and summary `size --validate` prints.
std::string FormatValidation(const ValidationReport& report);

}  // namespace pilotlight::model
