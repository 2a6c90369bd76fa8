// UpdateWithRetry: optimistic concurrency as the API expects it. Reads the
// object, applies `mutate`, and PUTs it back carrying the resourceVersion
// it read; when someone else wrote in between (409 Conflict) it reads again
// and re-applies, up to `attempts` times. For `/status` paths only the
// status stanza is written.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "controller/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace pilotlight::kube {

absl::Status UpdateWithRetry(KubeClient& client, const std::string& path,
                             const std::function<void(nlohmann::json&)>& mutate,
                             int attempts = 4);

}  // namespace pilotlight::kube
