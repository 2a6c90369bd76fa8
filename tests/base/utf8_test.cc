#include "controller/base/utf8.h"

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pilotlight {
namespace {

TEST(Utf8Test, Table) {
  const struct {
    std::string in;
    bool valid;
    std::string repaired;
  } cases[] = {
      {"", true, ""},
      {"plain /ml/llama", true, "plain /ml/llama"},
      {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5", true,
       "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5"},
      {"/nope/x\a\xFF\xFF/v2", false, "/nope/x\a\xEF\xBF\xBD\xEF\xBF\xBD/v2"},
      {"cut \xE2\x82", false, "cut \xEF\xBF\xBD\xEF\xBF\xBD"},  // mid-character
      {"\xC0\xAF", false, "\xEF\xBF\xBD\xEF\xBF\xBD"},          // overlong '/'
      {"\xED\xA0\x80", false,
       "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // a surrogate
      {"\xF4\x90\x80\x80", false,
       "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // > U+10FFFF
      {"\x80tail", false, "\xEF\xBF\xBDtail"},  // a lone continuation
  };
  for (const auto& c : cases) {
    EXPECT_EQ(IsValidUtf8(c.in), c.valid) << c.in;
    const std::string r = ValidUtf8(c.in);
    EXPECT_EQ(r, c.repaired) << c.in;
    EXPECT_TRUE(IsValidUtf8(r));
    // What the repair is for: JSON dumps it without throwing.
    EXPECT_NO_THROW((void)nlohmann::json(r).dump()) << c.in;
  }
}

}  // namespace
}  // namespace pilotlight
