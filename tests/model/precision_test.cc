#include "controller/model/precision.h"

#include "gtest/gtest.h"

namespace pilotlight::model {
namespace {

// Every precision round-trips through its name and has the documented size.
TEST(PrecisionTest, NamesAndBytes) {
  struct Row {
    Precision p;
    const char* name;
    double bytes;
  };
  const Row rows[] = {
      {Precision::kBf16, "bf16", 2.0}, {Precision::kFp16, "fp16", 2.0},
      {Precision::kFp8, "fp8", 1.0},   {Precision::kInt8, "int8", 1.0},
      {Precision::kInt4, "int4", 0.5},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(PrecisionName(r.p), r.name);
    EXPECT_DOUBLE_EQ(BytesPerElement(r.p), r.bytes) << r.name;
    absl::StatusOr<Precision> parsed = ParsePrecision(r.name);
    ASSERT_TRUE(parsed.ok()) << r.name;
    EXPECT_EQ(*parsed, r.p);
  }
}

// Aliases and case are accepted; unknown names list the known ones.
TEST(PrecisionTest, ParseAliasesAndErrors) {
  EXPECT_EQ(*ParsePrecision("BF16"), Precision::kBf16);
  EXPECT_EQ(*ParsePrecision("bfloat16"), Precision::kBf16);
  EXPECT_EQ(*ParsePrecision("float16"), Precision::kFp16);
  absl::StatusOr<Precision> bad = ParsePrecision("fp6");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("known: bf16, fp16, fp8, int8, int4"),
            absl::string_view::npos)
      << bad.status();
}

}  // namespace
}  // namespace pilotlight::model
