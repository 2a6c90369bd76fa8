// Waker: wakes a pod's engine that sleeps (vLLM's sleep mode, level 1:
// weights in host memory, the server up) for the proxy. An engine asleep
// answers requests 503; the proxy then asks the Waker, which asks the pod
// GET /is_sleeping and, if it is asleep, POST /wake_up; once that answers
// 200 the proxy sends the request again, on the same lease.
//
// One wake per pod at a time: requests that find the pod asleep while a
// wake is under way wait for that wake. A request sent before the pod's
// last wake ended was answered by the engine asleep: it is sent again
// without asking (the pod says it is awake by then). An engine without
// sleep mode (404) is not asleep, nor one still awake a second after its
// 503 (one falling asleep says so once its weights are out): its 503 goes
// to the client as it came. A wake refused (vLLM's error; the model-server
// stand-in's 507 when the GPU's memory is taken) is asked again, after a
// pause that doubles, until the deadline: a wake that keeps failing holds
// its requests as at zero, where the controller falls back to a replica of
// the endpoint's own (the engine is then wanted no more, below). A wake not
// answered at all (the pod gone) or still refused at the deadline fails
// with what the pod said: the proxy answers 503 with Retry-After.
//
// Engines on one pool pod share its GPU: a wake refused for want of GPU
// memory (the stand-in's 507, vLLM's 500) puts to sleep one of the pod's other
// engines that is awake and has nothing in flight (Neighbours::idle, in the
// order given), then asks again; while none is idle but some have requests in
// flight (Neighbours::busy) it waits for one, until the deadline -- or until
// the engine is no longer wanted (`still_wanted`: the controller started a
// replica of the endpoint's own, which serves it instead, or the endpoint's
// engine on another pool pod can take it), when the request may go there. A
// wake refused for another reason -- or with no neighbour busy nor any to put
// to sleep, so that room is not why -- gives way the same.
//
// Thread-safety: WakeIfAsleep may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace pilotlight::activator {

struct WakerOptions {
  // For GET /is_sleeping (a wake itself may take until the deadline).
  absl::Duration probe_timeout = absl::Seconds(1);
  // The pause before a refused wake is asked again, doubling up to the
  // longest.
  absl::Duration first_retry = absl::Milliseconds(250);
  absl::Duration max_retry = absl::Seconds(4);
};

class Waker {
 public:
  enum class Result { kNotAsleep, kWoken, kFailed };
  struct Outcome {
    Result result = Result::kNotAsleep;
    std::string error;  // kFailed: what the pod said, or why it did not
    bool sent = false;  // this call sent the POST /wake_up
    // The engine ("ip:port") put to sleep to make room on the GPU.
    std::string put_to_sleep;
    // kFailed because the pod stopped answering (gone): the request may
    // go to another.
    bool unreachable = false;
    // kFailed because the engine was no longer wanted while the wake waited
    // for room or was refused: the request may go to the endpoint's other
    // targets.
    bool elsewhere = false;
  };
  // The engines ("ip:port") that share the GPU of the engine at `address`:
  // those with no request in flight, and how many have some (awake, so
  // holding GPU memory).
  struct Neighbours {
    std::vector<std::string> idle;
    int busy = 0;
  };
  using NeighboursOf = std::function<Neighbours(const std::string& address)>;

  explicit Waker(WakerOptions options = {}, NeighboursOf neighbours = nullptr)
      : options_(options), neighbours_(std::move(neighbours)) {}

  // What a wake asks of its caller, and tells it, while it waits.
  struct Callbacks {
    // Null: always. False once the engine is wanted no more: the wake,
    // waiting for room or refused, gives up (kFailed, `elsewhere`).
    std::function<bool()> still_wanted;
    // Each time the pod refuses the wake for another reason than room on
    // its GPU (what making room cannot mend): null, nobody is told.
    std::function<void()> refused;
  };

  // `address` ("ip:port") answered 503 to a request sent at `sent`: awake
  // it again if its engine sleeps, by `deadline`. Gives up (kFailed) when
  // `gone` turns true (the client hung up) -- the wake itself once every
  // request waiting for it is gone -- or as `callbacks` say.
  Outcome WakeIfAsleep(const std::string& address, absl::Time sent,
                       absl::Time deadline, const std::atomic<bool>* gone,
                       const Callbacks& callbacks = {});

  // Wakes sent (POST /wake_up).
  int64_t wakes() const { return wakes_; }

 private:
  struct Wake {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Outcome outcome;
    int waiters = 0;  // requests waiting on it besides the one running it
  };
  // One pod's wake, on the caller's thread; given up, while it waits for
  // room or asks again, once `abandoned` says nobody waits for it.
  Outcome Run(const std::string& address, absl::Time deadline,
              const Callbacks& callbacks,
              const std::function<bool()>& abandoned) const;
  // Puts one of the idle neighbours awake to sleep: which, or "".
  std::string MakeRoom(const std::vector<std::string>& idle,
                       absl::Time deadline) const;

  const WakerOptions options_;
  const NeighboursOf neighbours_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Wake>> running_;
  // When each pod's last successful wake ended.
  std::map<std::string, absl::Time> woken_at_;
  std::atomic<int64_t> wakes_{0};
};

}  // namespace pilotlight::activator
