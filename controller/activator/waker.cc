#include "controller/activator/waker.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/base/host_port.h"
#include "controller/http/sleep_mode.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

namespace pilotlight::activator {
namespace {

// The error message of an answer in the OpenAI shape, else its body.
std::string Said(const httplib::Response& r) {
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("message") && j["error"]["message"].is_string()) {
    return j["error"]["message"].get<std::string>();
  }
  return r.body.substr(0, 200);
}

// How often a wake waiting for room on its pod's GPU looks again, and
// how long an engine that answered 503 and says it is awake is watched
// for falling asleep.
constexpr absl::Duration kRoomPoll = absl::Milliseconds(100);
constexpr absl::Duration kFallingAsleep = absl::Seconds(1);

// Longer than any request waits for its pod's first byte.
constexpr absl::Duration kForget = absl::Minutes(30);

}  // namespace

std::string Waker::MakeRoom(const std::vector<std::string>& idle,
                            absl::Time deadline) const {
  for (const std::string& n : idle) {
    const absl::StatusOr<std::pair<std::string, int>> pod =
        SplitHostPort(n, "pod");
    if (!pod.ok() || absl::Now() >= deadline) {
      continue;
    }
    httplib::Client c(pod->first, pod->second);
    http::SetClientTimeouts(
        c, std::min(options_.probe_timeout, deadline - absl::Now()));
    if (http::IsSleeping(c) != false) {
      continue;  // asleep already, waking, or no answer
    }
    http::SetClientTimeouts(c, deadline - absl::Now());
    const httplib::Result slept = c.Post("/sleep?level=1", "", "text/plain");
    if (slept && slept->status == 200) {
      return n;
    }
  }
  return "";
}

Waker::Outcome Waker::Run(const std::string& address, absl::Time deadline,
                          const Callbacks& callbacks,
                          const std::function<bool()>& abandoned) const {
  Outcome out;
  const absl::StatusOr<std::pair<std::string, int>> pod =
      SplitHostPort(address, "pod");
  if (!pod.ok()) {
    return out;
  }
  httplib::Client c(pod->first, pod->second);
  http::SetClientTimeouts(
      c, std::min(options_.probe_timeout, deadline - absl::Now()));
  std::optional<bool> asleep = http::IsSleeping(c);
  // An engine with sleep mode that says it is awake may be falling asleep
  // (its weights still going out): the 503 was that. Asked again a few
  // times before its 503 goes to the client.
  const absl::Time falling = std::min(deadline, absl::Now() + kFallingAsleep);
  while (asleep == false && absl::Now() < falling) {
    absl::SleepFor(kRoomPoll);
    asleep = http::IsSleeping(c);
  }
  if (asleep != true) {
    return out;  // no sleep mode (404), no answer, or awake
  }
  out.sent = true;
  int tries = 0;
  const auto wake_up = [&] {
    http::SetClientTimeouts(c, deadline - absl::Now());
    ++tries;
    return c.Post("/wake_up", "", "text/plain");
  };
  httplib::Result woke = wake_up();
  bool for_room = false;  // the last refusal was for want of room
  absl::Duration backoff = options_.first_retry;
  // Refused: for want of room when the GPU is taken (the stand-in's 507;
  // vLLM's wake fails with CUDA out of memory, a 500) -- an idle engine
  // beside it goes to sleep first, and while none is idle (their requests
  // run) it waits for one; for another reason (an engine restarting, a
  // wake that failed half-way), asked again after a pause that doubles.
  // Either until the deadline, or until the engine is wanted no more (a
  // replica of the endpoint's own, or its engine on another pool pod, takes
  // the request), its pod stops answering or nobody waits any more.
  while (woke && woke->status != 200 && absl::Now() < deadline) {
    for_room =
        neighbours_ != nullptr && (woke->status == 507 || woke->status == 500);
    std::string room;
    if (for_room) {
      const Neighbours n = neighbours_(address);
      room = MakeRoom(n.idle, deadline);
      // None awake to put to sleep and none busy: no neighbour holds the
      // GPU, so room is not why (an engine that fails to load, say).
      for_room = !room.empty() || n.busy > 0;
    }
    if (!room.empty()) {
      out.put_to_sleep = std::move(room);
      woke = wake_up();
      continue;
    }
    if (abandoned()) {
      out.result = Result::kFailed;
      out.error = "every request waiting for the wake is gone";
      return out;
    }
    if (!for_room && callbacks.refused != nullptr) {
      callbacks.refused();
    }
    if (callbacks.still_wanted != nullptr && !callbacks.still_wanted()) {
      out.result = Result::kFailed;
      out.error = absl::StrCat(
          "its endpoint has another target for the request now (the wake ",
          for_room ? "waited for room" : "was refused", ")");
      out.elsewhere = true;
      return out;
    }
    const absl::Duration pause = for_room ? kRoomPoll : backoff;
    absl::SleepFor(std::min(pause, deadline - absl::Now()));
    if (!for_room) {
      backoff = std::min(2 * backoff, options_.max_retry);
    }
    if (absl::Now() >= deadline) {
      break;
    }
    http::SetClientTimeouts(
        c, std::min(options_.probe_timeout, deadline - absl::Now()));
    asleep = http::IsSleeping(c);
    // No answer with time left: the pod is gone (one cut short by the
    // deadline is the wait's end, not the pod's).
    if (!asleep.has_value() && absl::Now() < deadline) {
      out.result = Result::kFailed;
      out.error = absl::StrCat("the pod stopped answering while its wake ",
                               for_room ? "waited for room" : "was retried");
      out.unreachable = true;
      return out;
    }
    if (asleep == false) {
      out.result = Result::kWoken;  // awake after all
      return out;
    }
    if (!for_room) {
      woke = wake_up();
    }
  }
  if (woke && woke->status == 200) {
    out.result = Result::kWoken;
    return out;
  }
  out.result = Result::kFailed;
  out.unreachable = !woke;
  out.error =
      woke ? absl::StrCat("POST /wake_up answered ", woke->status, ": ",
                          Said(*woke))
           : absl::StrCat("POST /wake_up: ", httplib::to_string(woke.error()));
  if (woke && for_room) {
    absl::StrAppend(&out.error,
                    " (no other engine of the pod was idle to put to sleep "
                    "by the activation timeout)");
  } else if (woke && tries > 1) {
    absl::StrAppend(&out.error, " (", tries,
                    " tries by the activation timeout)");
  }
  return out;
}

Waker::Outcome Waker::WakeIfAsleep(const std::string& address, absl::Time sent,
                                   absl::Time deadline,
                                   const std::atomic<bool>* gone,
                                   const Callbacks& callbacks) {
  std::shared_ptr<Wake> wake;
  bool mine = false;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    const auto woken = woken_at_.find(address);
    if (woken != woken_at_.end() && woken->second > sent) {
      // Answered asleep before a wake that has ended since: send again.
      return {Result::kWoken, "", false, "", false};
    }
    std::shared_ptr<Wake>& running = running_[address];
    if (running == nullptr) {
      running = std::make_shared<Wake>();
      mine = true;
    }
    wake = running;
  }
  if (mine) {
    Outcome out = Run(address, deadline, callbacks, [gone, &wake] {
      if (gone == nullptr || !*gone) {
        return false;
      }
      const std::lock_guard<std::mutex> w(wake->mu);
      return wake->waiters == 0;
    });
    const std::lock_guard<std::mutex> lock(mu_);
    if (out.sent) {
      ++wakes_;
      if (out.result == Result::kWoken) {
        const absl::Time now = absl::Now();
        // Pods come and go: what no request in flight can predate goes.
        std::erase_if(woken_at_, [now](const auto& kv) {
          return now - kv.second > kForget;
        });
        woken_at_[address] = now;
      }
    }
    running_.erase(address);
    {
      const std::lock_guard<std::mutex> w(wake->mu);
      wake->done = true;
      wake->outcome = out;
    }
    wake->cv.notify_all();
    return out;
  }
  // Another request's wake of the same pod: its outcome (looking at the
  // client every 50 ms).
  std::unique_lock<std::mutex> w(wake->mu);
  ++wake->waiters;
  while (!wake->done && absl::Now() < deadline && (gone == nullptr || !*gone)) {
    wake->cv.wait_for(w, std::chrono::milliseconds(50));
  }
  --wake->waiters;
  if (wake->done) {
    Outcome shared = wake->outcome;
    shared.sent = false;  // counted by the request that sent it
    return shared;
  }
  return {Result::kFailed,
          gone != nullptr && *gone ? "the client hung up"
                                   : "no wake within the activation timeout",
          false, "", false};
}

}  // namespace pilotlight::activator
