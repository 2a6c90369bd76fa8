// WorkQueue: keys to reconcile, as client-go's rate-limited work queue
// behaves. A key is queued at most once however often it is added; a key
// added while a worker holds it is queued again when the worker calls
// Done, so no change is lost and no key is worked on twice at once.
// AddRateLimited retries a failed key after a per-key exponential back-off
// (base_delay x 2^failures, at most max_delay); Forget resets it.
// Thread-safe; Get blocks until a key is due or the queue shuts down.
//
// The delays are waited on the condition variable's steady clock; `clock`
// gives the due times, so it should be the real clock outside tests of the
// back-off arithmetic (NextDelay is pure).
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "absl/time/time.h"
#include "controller/kube/clock.h"

namespace pilotlight::kube {

class WorkQueue {
 public:
  explicit WorkQueue(const Clock& clock,
                     absl::Duration base_delay = absl::Milliseconds(50),
                     absl::Duration max_delay = absl::Seconds(60));

  void Add(const std::string& key);
  void AddAfter(const std::string& key, absl::Duration delay);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int Failures(const std::string& key) const;

  // The next key, or nullopt once ShutDown was called and nothing is left.
  std::optional<std::string> Get();
  void Done(const std::string& key);
  void ShutDown();

  size_t Len() const;  // keys queued now (not waiting, not in work)

  // The back-off after `failures` failures.
  static absl::Duration NextDelay(int failures, absl::Duration base,
                                  absl::Duration max);

 private:
  void PromoteDueLocked(absl::Time now);

  const Clock& clock_;
  const absl::Duration base_delay_;
  const absl::Duration max_delay_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> dirty_;       // queued, or to queue again after Done
  std::set<std::string> processing_;  // held by a worker
  std::multimap<absl::Time, std::string> waiting_;
  std::map<std::string, int> failures_;
  bool shutting_down_ = false;
};

}  // namespace pilotlight::kube
