#include "controller/sim/activator_hold.h"

#include <algorithm>
#include <limits>

namespace pilotlight::sim {

ActivatorHold::ActivatorHold(const ActivatorModel& model, size_t requests)
    : model_(model),
      started_(requests, false),
      cause_(requests, static_cast<uint8_t>(MissCause::kServed)) {}

void ActivatorHold::SetDeadline(size_t index, int attempt, double now,
                                double activation_s) {
  const double client =
      model_.client_timeout
          ? now + absl::ToDoubleSeconds(*model_.client_timeout)
          : std::numeric_limits<double>::infinity();
  const double activation = model_.activation_timeout
                                ? now + activation_s
                                : std::numeric_limits<double>::infinity();
  const double t = std::min(client, activation);
  if (t < std::numeric_limits<double>::infinity()) {
    deadlines_.push({{t, index, attempt}, activation < client});
  }
}

ActivatorHold::Deadline ActivatorHold::TakeDeadline(
    const std::vector<Request>& requests) {
  const Deadline d = deadlines_.top();
  deadlines_.pop();
  queue_.erase(std::find(queue_.begin(), queue_.end(), &requests[d.index]));
  return d;
}

bool ActivatorHold::RetryLater(size_t index, int attempt, double now,
                               double delay_s) {
  if (attempt >= model_.client_retries) {
    return false;
  }
  retries_.push({now + delay_s, index, attempt + 1});
  return true;
}

ActivatorHold::Due ActivatorHold::TakeRetry() {
  const Due r = retries_.top();
  retries_.pop();
  return r;
}

}  // namespace pilotlight::sim
