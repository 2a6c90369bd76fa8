#include "controller/cmd/flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::cmd {
namespace {

using ::testing::HasSubstr;

const std::vector<FlagSpec> kSpecs = {
    {"model", false, "NAME", "model"},
    {"tpot", false, "DURATION", "tpot"},
    {"concurrency", false, "N", "n"},
    {"json", true, "", "json"},
};

// Both --name value and --name=value work; booleans take no value.
TEST(FlagsTest, ParsesForms) {
  absl::StatusOr<ParsedFlags> f =
      ParseFlags({"--model", "llama-3.1-8b", "--tpot=80ms", "--json",
                  "--concurrency", "4"},
                 kSpecs);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f->String("model"), "llama-3.1-8b");
  EXPECT_EQ(**f->Duration("tpot"), absl::Milliseconds(80));
  EXPECT_EQ(**f->Int("concurrency"), 4);
  EXPECT_TRUE(f->Bool("json"));
  EXPECT_FALSE(f->Has("other"));
}

// Durations accept units or bare seconds, and days (traces span them;
// simulate's --max-span defaults to 31d).
TEST(FlagsTest, Durations) {
  for (auto [text, want] : std::vector<std::pair<std::string, absl::Duration>>{
           {"2s", absl::Seconds(2)},
           {"1.5", absl::Seconds(1.5)},
           {"250ms", absl::Milliseconds(250)},
           {"3d", absl::Hours(72)},
           {"0.5d", absl::Hours(12)},
           {"31d", absl::Hours(31 * 24)}}) {
    absl::StatusOr<ParsedFlags> f = ParseFlags({"--tpot", text}, kSpecs);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(**f->Duration("tpot"), want) << text;
  }
}

// Errors say which flag and what was wrong.
TEST(FlagsTest, Errors) {
  struct Row {
    std::vector<std::string> args;
    const char* expect;
  };
  const Row rows[] = {
      {{"--modle", "x"}, "unknown flag --modle (known: --model --tpot"},
      {{"--model"}, "--model needs a value (NAME)"},
      {{"llama"}, "unexpected argument \"llama\""},
      {{"--json=yes"}, "--json takes no value"},
  };
  for (const Row& r : rows) {
    absl::StatusOr<ParsedFlags> f = ParseFlags(r.args, kSpecs);
    ASSERT_FALSE(f.ok()) << r.expect;
    EXPECT_THAT(std::string(f.status().message()), HasSubstr(r.expect));
  }
  absl::StatusOr<ParsedFlags> f =
      ParseFlags({"--concurrency", "many", "--tpot", "soon"}, kSpecs);
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(std::string(f->Int("concurrency").status().message()),
              HasSubstr("--concurrency: \"many\" is not an integer"));
  EXPECT_THAT(std::string(f->Duration("tpot").status().message()),
              HasSubstr("--tpot: \"soon\" is not a duration"));
  for (const char* bad : {"d", "xd", "infd", "1d2h"}) {
    f = ParseFlags({"--tpot", bad}, kSpecs);
    ASSERT_TRUE(f.ok());
    EXPECT_FALSE(f->Duration("tpot").ok()) << bad;
  }
}

}  // namespace
}  // namespace pilotlight::cmd
