// File: controller/cmd/size_command.h
//
// `pilotlight size`: which GPU class, how many GPUs per replica, at what
// precision and cost, for a model and an SLO. Wiring only: flags -> a
// model::SizingRequest -> model::Size -> a table or JSON.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/cmd/flags.h"
#include "controller/model/catalog.h"

namespace pilotlight::cmd {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;  // a bug or an environment failure
inline constexpr int kExitUsage = 2;     // bad flags, names or numbers
inline constexpr int kExitNoOption = 3;  // valid request, nothing meets it

// The catalog a command uses: --catalog FILE, else the built-in one.
absl::StatusOr<model::Catalog> LoadCatalog(const ParsedFlags& f);

int RunSize(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err);

}  // namespace pilotlight::cmd
