// `pilotlight size`: which GPU class, how many GPUs per replica, at what
// precision and cost, for a model and an SLO. Wiring only: flags -> a
// model::SizingRequest -> model::Size -> a table or JSON.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/base/exit_codes.h"
#include "controller/cmd/flags.h"
#include "controller/model/catalog.h"
#include "controller/model/sizing.h"

namespace pilotlight::cmd {

// The catalog a command uses: --catalog FILE, else the built-in one.
absl::StatusOr<model::Catalog> LoadCatalog(const ParsedFlags& f);
// The engine terms a command uses: --tuning FILE (kind: SizingTuning) read
// over `base`, else `base`.
absl::StatusOr<model::EngineTuning> LoadTuning(const ParsedFlags& f,
                                               const model::EngineTuning& base);

int RunSize(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err);

}  // namespace pilotlight::cmd
