// libFuzzer's entry for one target of tests/fuzz/targets.h, chosen at
// compile time (PILOTLIGHT_FUZZ_TARGET, its name). Built only by
// scripts/fuzz (clang-16, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tests/fuzz/targets.h"

namespace {

void (*Run())(absl::string_view) {
  static void (*run)(absl::string_view) = [] {
    for (const pilotlight::fuzz::Target& t : pilotlight::fuzz::Targets()) {
      if (std::strcmp(t.name, PILOTLIGHT_FUZZ_TARGET) == 0) {
        return t.run;
      }
    }
    pilotlight::fuzz::Check(false, "PILOTLIGHT_FUZZ_TARGET names a target");
    return static_cast<void (*)(absl::string_view)>(nullptr);
  }();
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Run()(absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
