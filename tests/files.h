// Files the tests read and the generated files they keep in sync:
// ReadFile (a path relative to the repository root, where ctest runs the
// tests), and ExpectGenerated, which fails when a committed file is not
// what its generator now produces -- or, with PILOTLIGHT_REGENERATE=1,
// rewrites it.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace pilotlight::testutil {

// The file's text ("" when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `path` must hold exactly `want`; `what` says what generates it.
inline void ExpectGenerated(const std::string& path, const std::string& want,
                            const std::string& what) {
  if (ReadFile(path) == want) {
    return;
  }
  if (const char* regen = std::getenv("PILOTLIGHT_REGENERATE");
      regen != nullptr && std::string(regen) == "1") {
    std::ofstream(path) << want;
    return;
  }
  ADD_FAILURE() << path << " is not " << what
                << "; rerun with PILOTLIGHT_REGENERATE=1 to rewrite it";
}

}  // namespace pilotlight::testutil
