// Every committed fuzz input -- the seed corpora (tests/fuzz/corpus/<target>/)
// and the inputs that once crashed, hung or broke a promise
// (tests/fuzz/regressions/<target>/) -- through its target, in the normal
// and the ASan+UBSan builds. A regression input that crashes again fails
// here without a fuzzer.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/fuzz/targets.h"

namespace pilotlight::fuzz {
namespace {

int ReplayFolder(const Target& t, const std::filesystem::path& dir) {
  int n = 0;
  if (!std::filesystem::exists(dir)) {
    return 0;
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().filename() == "README.md") {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    SCOPED_TRACE(entry.path().string());
    t.run(s.str());
    ++n;
  }
  return n;
}

TEST(FuzzReplayTest, EverySeedAndRegressionInput) {
  for (const Target& t : Targets()) {
    const int seeds =
        ReplayFolder(t, std::string("tests/fuzz/corpus/") + t.name);
    ReplayFolder(t, std::string("tests/fuzz/regressions/") + t.name);
    // Every target has seeds to start from (and to replay here).
    EXPECT_GE(seeds, 3) << t.name;
  }
}

}  // namespace
}  // namespace pilotlight::fuzz
