// A socket address as cpp-httplib writes it into a Request: the numeric
// host (getnameinfo's NI_NUMERICHOST) and the port. One writing for the
// activator's front (the addresses it gives each request) and ClientWatch
// (which matches requests to sockets by them).
#pragma once

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <string>

namespace pilotlight::http {

// The port of `a`; -1 when it is not an IP address.
inline int SocketPort(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
  }
  if (a.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
  }
  return -1;
}

// The host of `a`, numeric; false when it has none.
inline bool SocketHost(const sockaddr_storage& a, socklen_t len,
                       std::string& host) {
  std::array<char, NI_MAXHOST> buf{};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, buf.data(),
                    static_cast<socklen_t>(buf.size()), nullptr, 0,
                    NI_NUMERICHOST) != 0) {
    return false;
  }
  host = buf.data();
  return true;
}

}  // namespace pilotlight::http
