#include "controller/http/chunked.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace pilotlight::http {

bool ChunkedDecoder::Decode(absl::string_view in, size_t& used,
                            std::string& out) {
  size_t at = 0;
  while (state_ != State::kDone && at < in.size()) {
    if (state_ == State::kData) {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(left_, in.size() - at));
      out.append(in.data() + at, n);
      at += n;
      left_ -= n;
      if (left_ == 0) {
        state_ = State::kDataEnd;
      }
      continue;
    }
    const size_t eol = in.find("\r\n", at);
    if (eol == absl::string_view::npos) {
      if (in.size() - at > kMaxLineBytes) {
        why_ = "malformed chunked body: a line over 4 KiB";
        return false;
      }
      break;  // the rest of the line has not come yet
    }
    const absl::string_view line = in.substr(at, eol - at);
    at = eol + 2;
    switch (state_) {
      case State::kSize: {
        const absl::string_view hex = absl::StripAsciiWhitespace(
            line.substr(0, line.find(';')));  // extensions ignored
        uint64_t size = 0;
        if (hex.empty() || hex.size() > 15 ||
            !absl::SimpleHexAtoi(hex, &size)) {
          why_ = absl::StrCat("malformed chunk size: \"",
                              absl::CEscape(line.substr(0, 32)), "\"");
          return false;
        }
        left_ = size;
        state_ = size == 0 ? State::kTrailers : State::kData;
        break;
      }
      case State::kDataEnd:
        if (!line.empty()) {
          why_ = "malformed chunked body: no CRLF after a chunk";
          return false;
        }
        state_ = State::kSize;
        break;
      case State::kTrailers:
        if (line.empty()) {  // trailers are dropped
          state_ = State::kDone;
        }
        break;
      case State::kData:
      case State::kDone:
        break;
    }
  }
  used = at;
  return true;
}

}  // namespace pilotlight::http
