// The fuzz targets: every parser of outside input, each behind one
// function of raw bytes. Each must return on any input -- no crash, no
// hang, no sanitizer report -- and checks what its parser promises about
// what it accepts (an accepted trace is sorted and finite, a Prometheus
// sample is never NaN, ...), aborting when a promise is broken.
//
// The same functions run under libFuzzer (tests/fuzz/fuzz_main.cc, built by
// scripts/fuzz with clang-16 and ASan+UBSan) and in the unit tests
// (fuzz_replay_test replays every committed seed and regression input).
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace pilotlight::fuzz {

struct Target {
  const char* name;  // corpus folder: tests/fuzz/corpus/<name>/
  void (*run)(absl::string_view data);
};

// Every target, by name.
const std::vector<Target>& Targets();

// Aborts with `what` when `ok` is false (a broken promise is a finding).
void Check(bool ok, const char* what);

}  // namespace pilotlight::fuzz
