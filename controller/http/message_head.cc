#include "controller/http/message_head.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace pilotlight::http {
namespace {

// An HTTP token: no space, control character or colon.
bool Token(absl::string_view s) {
  return !s.empty() && std::none_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isspace(static_cast<unsigned char>(c)) ||
           absl::ascii_iscntrl(static_cast<unsigned char>(c)) || c == ':';
  });
}

}  // namespace

std::optional<Refusal> ParseRequestHead(absl::string_view head,
                                        httplib::Request& req, Framing& framing,
                                        uint64_t& length) {
  const std::vector<absl::string_view> lines = absl::StrSplit(head, "\r\n");
  const std::vector<absl::string_view> start =
      absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  if (start.size() != 3 || !Token(start[0]) || start[1].empty() ||
      (start[2] != "HTTP/1.1" && start[2] != "HTTP/1.0")) {
    return Refusal{400, "malformed request line"};
  }
  req.method = std::string(start[0]);
  req.target = std::string(start[1]);
  req.path = req.target.substr(0, req.target.find('?'));
  req.version = std::string(start[2]);
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos || !Token(lines[i].substr(0, colon))) {
      return Refusal{400, "malformed request header"};
    }
    req.headers.emplace(
        std::string(lines[i].substr(0, colon)),
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1))));
  }
  const std::string coding =
      absl::AsciiStrToLower(req.get_header_value("Transfer-Encoding"));
  if (!coding.empty()) {
    if (absl::StripAsciiWhitespace(coding) != "chunked") {
      return Refusal{501, absl::StrCat("transfer coding \"", coding,
                                       "\" not supported (chunked is)")};
    }
    framing = Framing::kChunked;
    return std::nullopt;
  }
  framing = Framing::kLength;
  length = 0;
  const size_t lengths = req.get_header_value_count("Content-Length");
  for (size_t i = 0; i < lengths; ++i) {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(req.get_header_value("Content-Length", i), &n) ||
        (i > 0 && n != length)) {
      return Refusal{400, "malformed Content-Length"};
    }
    length = n;
  }
  return std::nullopt;
}

std::optional<std::string> ParseResponseHead(absl::string_view head,
                                             bool head_request,
                                             ResponseHead& out) {
  const std::vector<absl::string_view> lines = absl::StrSplit(head, "\r\n");
  // "HTTP/1.1 200 OK"
  const absl::string_view line = lines[0];
  if (!absl::StartsWith(line, "HTTP/1.") || line.size() < 12 ||
      line[8] != ' ' || !absl::SimpleAtoi(line.substr(9, 3), &out.status) ||
      out.status < 100 || out.status > 999) {
    return absl::StrCat("not an HTTP/1.x status line: \"",
                        absl::CEscape(line.substr(0, 64)), "\"");
  }
  out.headers.clear();
  if (out.status < 200) {
    return std::nullopt;  // 100 Continue, 103 Early Hints: the real one follows
  }
  // HTTP/1.1 keeps the connection unless the pod says close; HTTP/1.0's
  // keep-alive is not taken up (the request did not ask for it).
  out.keep_alive = line[7] == '1';
  bool chunked = false;
  std::optional<uint64_t> length;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos || colon == 0) {
      return absl::StrCat("malformed response header: \"",
                          absl::CEscape(lines[i].substr(0, 64)), "\"");
    }
    const std::string name(lines[i].substr(0, colon));
    const std::string value(
        absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    const std::string lower = absl::AsciiStrToLower(name);
    if (lower == "connection") {
      for (const absl::string_view token : absl::StrSplit(value, ',')) {
        if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(token),
                                   "close")) {
          out.keep_alive = false;
        }
      }
    } else if (lower == "transfer-encoding") {
      chunked = absl::StrContains(absl::AsciiStrToLower(value), "chunked");
    } else if (lower == "content-length") {
      uint64_t n = 0;
      if (!absl::SimpleAtoi(value, &n) || (length && *length != n)) {
        return absl::StrCat("bad Content-Length: \"", absl::CEscape(value),
                            "\"");
      }
      length = n;
    }
    out.headers.emplace(name, value);
  }
  // RFC 9112 6.3: no body; chunked wins over a length; else the length;
  // else until the connection closes.
  out.length = 0;
  if (head_request || out.status == 204 || out.status == 304) {
    out.framing = Framing::kNone;
  } else if (chunked) {
    out.framing = Framing::kChunked;
  } else if (length) {
    out.framing = Framing::kLength;
    out.length = *length;
  } else {
    out.framing = Framing::kUntilClose;
  }
  return std::nullopt;
}

}  // namespace pilotlight::http
