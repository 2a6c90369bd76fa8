#include "controller/policy/endpoint_spec.h"

#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/policy/world.h"

namespace pilotlight::policy {
namespace {

using ::testing::HasSubstr;
using testing::Llama8b;
using testing::Variant;

// Each bad spec is refused with the field that is wrong.
TEST(EndpointSpecTest, ValidationNamesTheField) {
  const model::Catalog catalog = *model::Catalog::Default();
  struct Case {
    const char* purpose;
    std::function<void(EndpointSpec&)> mutate;
    const char* want;  // substring of the error; "" = valid
  };
  const Case cases[] = {
      {"the default is valid", [](EndpointSpec&) {}, ""},
      {"no variants", [](EndpointSpec& s) { s.variants.clear(); }, "variants"},
      {"min above max",
       [](EndpointSpec& s) {
         s.min_replicas = 5;
         s.max_replicas = 2;
       },
       "replicas.max"},
      {"zero TPOT", [](EndpointSpec& s) { s.slo.tpot = absl::ZeroDuration(); },
       "slo.tpotSeconds"},
      {"cold-start fraction of 1",
       [](EndpointSpec& s) { s.slo.max_cold_start_fraction = 1; },
       "slo.maxColdStartFraction"},
      {"a keep-alive spend bound of 0 is valid",
       [](EndpointSpec& s) { s.slo.max_keep_alive_cost_per_day_usd = 0; }, ""},
      {"a negative keep-alive spend bound",
       [](EndpointSpec& s) { s.slo.max_keep_alive_cost_per_day_usd = -1; },
       "slo.maxKeepAliveCostPerDayUSD"},
      {"unknown class lists the known ones",
       [](EndpointSpec& s) { s.variants[0].gpu_class = "h900"; },
       "variants[0].gpuClass"},
      {"duplicate deployment",
       [](EndpointSpec& s) { s.variants.push_back(s.variants[0]); },
       "variants[1].deployment"},
      {"spot on a class without spot",
       [](EndpointSpec& s) {
         s.variants[0].gpu_class = "mi300x";
         s.variants[0].capacity = CapacityType::kSpot;
       },
       "variants[0].capacityType"},
      {"more GPUs than a node has",
       [](EndpointSpec& s) { s.variants[0].gpus_per_replica = 16; },
       "variants[0].gpusPerReplica"},
  };
  for (const Case& c : cases) {
    EndpointSpec s = Llama8b({Variant("chat-a100", "a100-80gb")});
    c.mutate(s);
    const absl::Status st = ValidateEndpointSpec(s, catalog);
    if (std::string(c.want).empty()) {
      EXPECT_TRUE(st.ok()) << c.purpose << ": " << st;
    } else {
      EXPECT_THAT(std::string(st.message()), HasSubstr(c.want)) << c.purpose;
    }
  }
}

}  // namespace
}  // namespace pilotlight::policy
