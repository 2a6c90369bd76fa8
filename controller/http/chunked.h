// ChunkedDecoder: HTTP/1.1's chunked transfer coding (RFC 9112 7.1),
// decoded as its bytes come -- a pod's streamed response (Forward) and a
// client's chunked request body (FrontServer). Chunk extensions and
// trailers are dropped; a size line over 4 KiB or a chunk without its CRLF
// is an error.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace pilotlight::http {

class ChunkedDecoder {
 public:
  // Appends the body bytes at the front of `in` to `out` and returns how
  // many bytes of `in` it used (an incomplete line is left for more), up
  // to the end of the body; false on malformed input (error() says why).
  bool Decode(absl::string_view in, size_t& used, std::string& out);
  bool done() const { return state_ == State::kDone; }
  // What is left of the chunk being read (its size, before its data).
  uint64_t chunk_left() const { return state_ == State::kData ? left_ : 0; }
  const std::string& error() const { return why_; }

  static constexpr size_t kMaxLineBytes = 4096;

 private:
  enum class State { kSize, kData, kDataEnd, kTrailers, kDone };
  State state_ = State::kSize;
  uint64_t left_ = 0;
  std::string why_;
};

}  // namespace pilotlight::http
