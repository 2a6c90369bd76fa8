// Text from outside (an HTTP path, the first bytes of a garbage Prometheus
// answer) that goes into JSON -- a status condition, an event, an error
// body -- must be valid UTF-8: nlohmann::json throws on dumping anything
// else, and an exception there ends the process. ValidUtf8 replaces every
// byte that does not start or continue a well-formed sequence (RFC 3629: no
// overlongs, no surrogates, nothing above U+10FFFF) with U+FFFD.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace pilotlight {

// Length of the well-formed UTF-8 sequence at s[i], or 0 when there is none.
inline size_t Utf8SequenceAt(absl::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  const uint8_t c = b(0);
  if (c < 0x80) {
    return 1;
  }
  size_t n = 0;
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    lo = c == 0xE0 ? 0xA0 : 0x80;  // no overlongs
    hi = c == 0xED ? 0x9F : 0xBF;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    lo = c == 0xF0 ? 0x90 : 0x80;
    hi = c == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size() || b(1) < lo || b(1) > hi) {
    return 0;
  }
  for (size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xBF) {
      return 0;
    }
  }
  return n;
}

inline bool IsValidUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) {
      return false;
    }
    i += n;
  }
  return true;
}

// `s` with each ill-formed byte replaced by U+FFFD.
inline std::string ValidUtf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace pilotlight
