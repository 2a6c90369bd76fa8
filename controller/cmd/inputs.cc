#include "controller/cmd/inputs.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace pilotlight::cmd {

absl::StatusOr<std::string> ReadFlagFile(const std::string& path,
                                         absl::string_view flag) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--", flag, " ", path, ": cannot open the file"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void CatalogInput::Declare(FlagSet& flags) {
  flags.Add("catalog", &path, "FILE", "GPU catalog YAML (default built-in)");
}

absl::StatusOr<model::Catalog> CatalogInput::Load() const {
  if (!path) {
    return model::Catalog::Default();
  }
  absl::StatusOr<std::string> text = ReadFlagFile(*path, "catalog");
  if (!text.ok()) {
    return text.status();
  }
  return model::Catalog::FromYaml(*text, *path);
}

void TuningInput::Declare(FlagSet& flags, std::string help) {
  flags.Add("tuning", &path, "FILE", std::move(help));
}

absl::StatusOr<model::EngineTuning> TuningInput::Load(
    const model::EngineTuning& base) const {
  if (!path) {
    return base;
  }
  absl::StatusOr<std::string> text = ReadFlagFile(*path, "tuning");
  if (!text.ok()) {
    return text.status();
  }
  return model::ParseTuning(*text, *path, base);
}

void KubeInput::Declare(FlagSet& flags) {
  flags
      .Add("kubeconfig", &kubeconfig, "FILE",
           "kubeconfig (default $KUBECONFIG, else the in-cluster service "
           "account)")
      .Add("context", &context, "NAME",
           "kubeconfig context (default: current)");
}

absl::StatusOr<kube::KubeConfig> KubeInput::Load() const {
  const char* env = std::getenv("KUBECONFIG");
  const std::string file = kubeconfig.value_or(env != nullptr ? env : "");
  return file.empty() ? kube::InClusterConfig()
                      : kube::KubeConfigFromFile(file, context.value_or(""));
}

}  // namespace pilotlight::cmd
