#include "controller/kube/work_queue.h"

#include <chrono>
#include <cmath>

namespace pilotlight::kube {

WorkQueue::WorkQueue(const Clock& clock, absl::Duration base_delay,
                     absl::Duration max_delay)
    : clock_(clock), base_delay_(base_delay), max_delay_(max_delay) {}

absl::Duration WorkQueue::NextDelay(int failures, absl::Duration base,
                                    absl::Duration max) {
  if (failures <= 0) {
    return absl::ZeroDuration();
  }
  const double factor = std::ldexp(1.0, std::min(failures - 1, 40));
  return std::min(base * factor, max);
}

void WorkQueue::Add(const std::string& key) {
  const std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_ || !dirty_.insert(key).second) {
    return;  // already queued (or to be queued again after Done)
  }
  if (processing_.count(key) == 0) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  if (delay <= absl::ZeroDuration()) {
    Add(key);
    return;
  }
  const std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) {
    return;
  }
  waiting_.emplace(clock_.Now() + delay, key);
  cv_.notify_one();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  int failures = 0;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    failures = ++failures_[key];
  }
  AddAfter(key, NextDelay(failures, base_delay_, max_delay_));
}

void WorkQueue::Forget(const std::string& key) {
  const std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
}

int WorkQueue::Failures(const std::string& key) const {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDueLocked(absl::Time now) {
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    const std::string key = waiting_.begin()->second;
    waiting_.erase(waiting_.begin());
    if (dirty_.insert(key).second && processing_.count(key) == 0) {
      queue_.push_back(key);
    }
  }
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    PromoteDueLocked(clock_.Now());
    if (!queue_.empty()) {
      std::string key = std::move(queue_.front());
      queue_.pop_front();
      dirty_.erase(key);
      processing_.insert(key);
      return key;
    }
    if (shutting_down_) {
      return std::nullopt;
    }
    if (waiting_.empty()) {
      cv_.wait(lock);
    } else {
      const absl::Duration until = waiting_.begin()->first - clock_.Now();
      cv_.wait_for(lock, absl::ToChronoMicroseconds(
                             std::max(until, absl::Microseconds(100))));
    }
  }
}

void WorkQueue::Done(const std::string& key) {
  const std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) != 0) {  // added while in work: queue it again
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  const std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
  waiting_.clear();
  cv_.notify_all();
}

size_t WorkQueue::Len() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

}  // namespace pilotlight::kube
