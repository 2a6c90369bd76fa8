// The heads of HTTP/1.1 messages (RFC 9112), parsed from the bytes up to
// the empty line: a client's request (FrontServer) and a pod's response
// (Forward). Pure functions of their input, so they are fuzzed as they run
// (tests/fuzz: http_request_head, http_response_head).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "httplib.h"

namespace pilotlight::http {

// How a message's body comes.
enum class Framing {
  kNone,        // no body (a HEAD request's answer, 204, 304)
  kLength,      // Content-Length bytes
  kChunked,     // the chunked coding (ChunkedDecoder)
  kUntilClose,  // until the connection closes (a response only)
};

// Why a request head is refused: the status to answer and a line saying
// why.
struct Refusal {
  int status = 400;
  std::string message;
};

// A request's line and headers (without the empty line) into `req`, and
// how its body comes (kLength with `length`, possibly 0, or kChunked).
// A request line that is not METHOD TARGET HTTP/1.x, a header without a
// name, a transfer coding other than chunked, or Content-Length values that
// are not one number are refused.
std::optional<Refusal> ParseRequestHead(absl::string_view head,
                                        httplib::Request& req, Framing& framing,
                                        uint64_t& length);

struct ResponseHead {
  int status = 0;  // 100-999
  httplib::Headers headers;
  bool keep_alive = false;  // HTTP/1.1 without Connection: close
  Framing framing = Framing::kNone;
  uint64_t length = 0;  // kLength's
};

// A response's status line and headers (without the empty line). An
// interim answer (1xx) leaves `out.headers` empty: the real one follows.
// `head_request`: the request was a HEAD (no body comes back). Returns why
// not, when the head is not an HTTP/1.x response.
std::optional<std::string> ParseResponseHead(absl::string_view head,
                                             bool head_request,
                                             ResponseHead& out);

}  // namespace pilotlight::http
