// The floor under any proxy in the request path, for activator_bench: a
// relay that copies bytes between each accepted connection and one
// connection of its own to the model server, on one thread (epoll), with
// nothing else -- no HTTP parsing, no routing, no hold, and the model
// server connection kept for the client connection's life (the activator
// opens one per request). Whatever it adds to a request is the cost of the
// extra hop alone (two more loopback sends per chunk, one more process to
// schedule), which an activator of any design pays while it is in the
// path.
//
// Not product code: a bench instrument. Backpressure as a proxy has it
// (a side's bytes wait in one buffer, and that side is not read again
// until they are written); either side closing or failing closes both.
#pragma once

#include <functional>

namespace pilotlight::bench {

// Listens on 127.0.0.1 (any free port), calls `ready` with the port, and
// relays every connection to 127.0.0.1:`target_port` until the process
// ends. Returns only if it cannot listen (false). With
// `thread_per_connection`, each connection gets a thread of its own that
// waits with poll(2) on both sockets (the activator's threading, without
// its HTTP work), instead of the one epoll thread.
bool RunTcpRelay(int target_port, const std::function<void(int port)>& ready,
                 bool thread_per_connection = false);

}  // namespace pilotlight::bench
