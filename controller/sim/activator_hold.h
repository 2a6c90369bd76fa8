// ActivatorHold: the activator in front of a replay's replicas, as the live
// one behaves (ActivatorModel): the requests it holds or queues in FIFO
// order, bounded; when each waiting request stops waiting (its client's
// timeout, the activator's activation timeout); the clients' tries again;
// and what each request found when it arrived (why it missed, if it does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

#include "controller/sim/sim_config.h"
#include "controller/sim/trace.h"

namespace pilotlight::sim {

// Why a request missed its SLO: what it found when it arrived.
enum class MissCause {
  kNoneReady,      // no replica ready (at zero, or all starting)
  kFullStarting,   // every ready replica full, another one starting
  kFullNoneAsked,  // every ready replica full, none starting
  kServed,         // a free slot at once: its own prefill or batch was slow
};

class ActivatorHold {
 public:
  // Something due for request `index` at `t`, on its client's try `attempt`
  // (0: its first); earliest first, then in trace order.
  struct Due {
    double t = 0;
    size_t index = 0;
    int attempt = 0;
    bool operator>(const Due& o) const {
      return t != o.t ? t > o.t : index > o.index;
    }
  };
  // When a waiting request stops waiting.
  struct Deadline : Due {
    bool activation = false;  // the activator's 503, else the client left
  };

  ActivatorHold(const ActivatorModel& model, size_t requests);

  // A try arrives: counted as demand on its first try only (the OpenAI
  // SDKs mark a retry, and the activator reports each request once).
  void CountArrival(int attempt) { arrivals_ += attempt == 0 ? 1 : 0; }
  int64_t arrivals() const { return arrivals_; }
  // The hold holds its most (ActivatorModel::max_held): an arrival that
  // finds no free slot either is answered 429.
  bool AtBound() const {
    return model_.max_held > 0 && std::ssize(queue_) >= model_.max_held;
  }

  std::deque<const Request*>& queue() { return queue_; }
  const std::deque<const Request*>& queue() const { return queue_; }

  // The request waits, from `now`, until the first of its client's timeout
  // and the activation timeout `activation_s` after its arrival.
  void SetDeadline(size_t index, int attempt, double now, double activation_s);
  // When the next waiting request stops waiting (infinity: none will);
  // deadlines of requests that started meanwhile are dropped.
  double NextDeadline() {
    while (!deadlines_.empty() && started_[deadlines_.top().index]) {
      deadlines_.pop();
    }
    return deadlines_.empty() ? std::numeric_limits<double>::infinity()
                              : deadlines_.top().t;
  }
  // The next waiting request (of `requests`) stops waiting: out of the
  // queue.
  Deadline TakeDeadline(const std::vector<Request>& requests);

  // The client tries again `delay_s` after `now`, if it has tries left.
  bool RetryLater(size_t index, int attempt, double now, double delay_s);
  double NextRetry() const {
    return retries_.empty() ? std::numeric_limits<double>::infinity()
                            : retries_.top().t;
  }
  Due TakeRetry();

  // First started on a replica (or stopped waiting for good).
  bool started(size_t index) const { return started_[index]; }
  void MarkStarted(size_t index) { started_[index] = true; }
  // What it found on its first try.
  void Found(size_t index, MissCause cause) {
    cause_[index] = static_cast<uint8_t>(cause);
  }
  uint8_t cause(size_t index) const { return cause_[index]; }

 private:
  const ActivatorModel& model_;
  std::deque<const Request*> queue_;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>>
      deadlines_;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> retries_;
  std::vector<bool> started_;   // per request
  std::vector<uint8_t> cause_;  // per request: MissCause, kServed at once
  int64_t arrivals_ = 0;        // first tries, since the start
};

}  // namespace pilotlight::sim
