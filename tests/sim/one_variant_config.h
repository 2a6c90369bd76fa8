// The simulator configuration the sim tests and benches start from:
// endpoint "e" serving llama-3.1-8b on one a100-80gb variant, with the
// catalog given (which must outlive the config).
#pragma once

#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/sim/simulator.h"

namespace pilotlight::sim {

inline SimConfig OneVariantConfig(const model::Catalog& catalog) {
  SimConfig c;
  c.catalog = &catalog;
  c.spec.name = "e";
  c.spec.generation = 1;
  c.spec.model = *model::FindPreset("llama-3.1-8b");
  policy::VariantSpec v;
  v.deployment = "d";
  v.gpu_class = "a100-80gb";
  c.spec.variants = {v};
  return c;
}

}  // namespace pilotlight::sim
