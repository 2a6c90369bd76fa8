// Raw TCP on 127.0.0.1 for tests that need the socket itself (a pod that
// never answers, a client that hangs up at a chosen moment): a listening
// socket on a free port, and a connected client.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace pilotlight::testutil {

// Reads (and accepts) on `fd` give up after `seconds` instead of blocking
// a broken test for ever.
inline void SetReceiveTimeout(int fd, int seconds) {
  timeval tv{};
  tv.tv_sec = seconds;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

// A socket listening on 127.0.0.1 at a free port (in `port`); -1 on error.
inline int ListenLoopback(int& port, int backlog = 8) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
      ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    return -1;
  }
  port = ntohs(a.sin_port);
  SetReceiveTimeout(fd, 30);  // accept(2) too
  return fd;
}

// A socket connected to 127.0.0.1:`port`; -1 on error.
inline int ConnectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    return -1;
  }
  SetReceiveTimeout(fd, 30);
  return fd;
}

// A POST of `body` (JSON) to `path` on a new connection to `port`, the
// connection left open for the caller to read from or close; -1 when it
// could not be sent.
inline int PostAndLeaveOpen(int port, const std::string& path,
                            const std::string& body) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) {
    return -1;
  }
  const std::string req = absl::StrCat(
      "POST ", path, " HTTP/1.1\r\nHost: x\r\n",
      "Content-Type: application/json\r\nContent-Length: ", body.size(),
      "\r\n\r\n", body);
  if (::send(fd, req.data(), req.size(), 0) !=
      static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace pilotlight::testutil
