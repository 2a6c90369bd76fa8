// The engine terms of the sizing model (EngineTuning) as a file, so that a
// fit to your own measurements can size with what it found:
//
//   pilotlight size --validate mine.csv --fit --save-tuning mine.yaml
//   pilotlight size --model llama-3.1-8b --tuning mine.yaml
//
//   kind: SizingTuning
//   memoryBandwidthUtilization: 0.926
//   weightReadEfficiency8bit: 0.811
//   weightReadEfficiency4bit: 1
//   moeExpertReadEfficiency: 0.552
//   modelFlopsUtilization: 0.742
//   modelFlopsUtilization8bit: 0.532
//   rooflineOverlap: 0.118
//   stepOverhead: 1969us
//   allreduceLatencyNvlink: 1.1us
//
// Every key is optional (an absent one keeps the value it is read over);
// also `modelFlopsUtilizationFp4`, `requestOverhead`,
// `allreduceLatencyPcie`, `int4GroupSize`. Durations as Go writes them
// ("1.2ms", "850us"). An unknown key, a value of the wrong type or out of
// range is an error naming the file and the key. Pure code: the caller
// reads and writes the file.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/model/sizing.h"

namespace pilotlight::model {

// The terms of `yaml` over `base`; checked as ValidateTuning checks them.
absl::StatusOr<EngineTuning> ParseTuning(absl::string_view yaml,
                                         absl::string_view origin,
                                         const EngineTuning& base);

// The terms ParseTuning reads, every one written (a file ParseTuning reads
// back to the same values, to the printed precision).
std::string FormatTuningFile(const EngineTuning& t);

}  // namespace pilotlight::model
