// What several commands read the same way, declared and loaded in one
// place: the GPU catalog (--catalog), the engine's terms (--tuning) and the
// API server's address (--kubeconfig, --context).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "controller/cmd/flags.h"
#include "controller/kube/kube_config.h"
#include "controller/model/catalog.h"
#include "controller/model/sizing.h"
#include "controller/model/tuning_file.h"

namespace pilotlight::cmd {

// The file's contents; NotFound naming `flag` when it cannot be opened.
absl::StatusOr<std::string> ReadFlagFile(const std::string& path,
                                         absl::string_view flag);

// --catalog FILE: a GPU catalog YAML; the built-in one without it.
struct CatalogInput {
  std::optional<std::string> path;
  void Declare(FlagSet& flags);
  absl::StatusOr<model::Catalog> Load() const;
};

// --tuning FILE: the engine's terms (kind: SizingTuning, as `size
// --validate --fit --save-tuning` writes them) read over a base.
struct TuningInput {
  std::optional<std::string> path;
  void Declare(FlagSet& flags, std::string help);
  absl::StatusOr<model::EngineTuning> Load(
      const model::EngineTuning& base) const;
};

// --kubeconfig FILE (else $KUBECONFIG, else the in-cluster service account)
// and --context NAME.
struct KubeInput {
  std::optional<std::string> kubeconfig;
  std::optional<std::string> context;
  void Declare(FlagSet& flags);
  absl::StatusOr<kube::KubeConfig> Load() const;
};

}  // namespace pilotlight::cmd
