// LoadTrace: a trace file (plain, .gz or .tar.gz) in any supported format,
// detected from its content unless forced, restricted to a time window and
// an endpoint subset.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "controller/sim/servegen.h"
#include "controller/sim/trace.h"

namespace pilotlight::sim {

// `window` carries --start/--duration/--endpoints (for every format) and the
// ServeGen sampling seed and token lengths.
absl::StatusOr<Trace> LoadTrace(const std::string& path, TraceFormat format,
                                const ServeGenOptions& window);
// The same over a file's bytes already read (plain or gzipped); `path`
// names it in messages (and a ServeGen client by its base name).
absl::StatusOr<Trace> LoadTraceData(std::string data, const std::string& path,
                                    TraceFormat format,
                                    const ServeGenOptions& window);

}  // namespace pilotlight::sim
