// ClientWatch: notices clients that hang up while their request waits --
// held for a pod, or sent to one that has not answered yet. cpp-httplib
// 0.11.4 gives a handler no way to see its connection, so a client that
// went away was noticed only when the answer was written: meanwhile its
// request held a place in the hold (counted as demand, and against the
// hold's bound) and was sent on to a pod once one was ready. Clients that
// time out and retry while a model cold-starts piled up such ghosts.
//
// How: a server that knows the request's socket hands it over
// (WatchSocket: the activator's own front, front_server.h); otherwise a
// request waiting for longer than one pass is matched to its socket by its
// addresses and ports (`/proc/self/fd`, getpeername/getsockname -- the
// same numbers cpp-httplib put in the request). Every pass polls
// the waiting sockets for the client's FIN or a reset (POLLRDHUP, POLLHUP,
// POLLERR), reading nothing. The socket stays open while its handler
// runs, so the match holds for as long as the registration lives. As Go's
// net/http (and so Knative's activator) does, a client that shuts its side
// counts as gone.
//
// One thread; a pass scans the process's descriptors only when a request
// has waited a pass without being matched.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/time/time.h"

namespace pilotlight::http {

// One TCP connection of this process, as cpp-httplib describes it in a
// Request (the peer's address and port, and our port: our address adds
// nothing to tell connections apart).
struct ConnectionId {
  std::string remote_addr;
  int remote_port = -1;
  int local_port = -1;
};

class ClientWatch {
 public:
  explicit ClientWatch(absl::Duration period = absl::Milliseconds(250));
  ~ClientWatch();
  ClientWatch(const ClientWatch&) = delete;
  ClientWatch& operator=(const ClientWatch&) = delete;

  // Unregisters when destroyed; `on_gone` never runs after that returns.
  class Registration {
   public:
    ~Registration();
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    friend class ClientWatch;
    Registration(ClientWatch* watch, int64_t id) : watch_(watch), id_(id) {}
    ClientWatch* watch_;
    int64_t id_;
  };

  // Calls `on_gone` once, from the watch's thread, if the client of `conn`
  // hangs up while the registration lives. `on_gone` must not destroy its
  // own registration (the destructor waits for it to return).
  std::unique_ptr<Registration> Watch(const ConnectionId& conn,
                                      std::function<void()> on_gone);
  // The same for a connection whose socket the caller knows (the
  // activator's own front): polled from the next pass, no scan to find it.
  // `socket` must stay open while the registration lives.
  std::unique_ptr<Registration> WatchSocket(int socket,
                                            std::function<void()> on_gone);

  // The thread: a pass every period until Stop (or destruction).
  void Start();
  void Stop();
  // One pass now, matching every registration however young (tests).
  void PassNow() { Pass(/*match_young=*/true); }
  int watched() const;

 private:
  struct Entry {
    ConnectionId conn;
    std::function<void()> on_gone;
    absl::Time since;
    int fd = -1;  // -1: not matched yet
  };
  void Pass(bool match_young);
  void Unregister(int64_t id);

  const absl::Duration period_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // Stop
  std::condition_variable idle_;  // no on_gone running
  std::map<int64_t, Entry> entries_;
  int64_t next_id_ = 0;
  int64_t firing_ = -1;  // the registration whose on_gone runs now
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pilotlight::http
