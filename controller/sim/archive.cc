#include "controller/sim/archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace pilotlight::sim {

absl::StatusOr<std::string> ReadMaybeGzip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  std::ostringstream raw;
  raw << in.rdbuf();
  return MaybeGunzip(std::move(raw).str(), path);
}

absl::StatusOr<std::string> MaybeGunzip(std::string data,
                                        absl::string_view name) {
  if (data.size() < 2 || static_cast<unsigned char>(data[0]) != 0x1f ||
      static_cast<unsigned char>(data[1]) != 0x8b) {
    return data;
  }
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) {
    return absl::InternalError("zlib init failed");
  }
  std::string out;
  out.resize(std::max<size_t>(data.size() * 4, 1 << 16));
  zs.next_in = reinterpret_cast<Bytef*>(data.data());
  zs.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.total_out >= out.size()) {
      out.resize(out.size() * 2);
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + zs.total_out);
    zs.avail_out = static_cast<uInt>(out.size() - zs.total_out);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END && zs.avail_in > 0) {
      // Concatenated gzip members: continue with the next one.
      rc = inflateReset(&zs);
      if (rc != Z_OK) {
        break;
      }
      continue;
    }
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::string msg = zs.msg != nullptr ? zs.msg : "corrupt data";
      inflateEnd(&zs);
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": not a valid gzip file (", msg, ")"));
    }
  }
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

absl::StatusOr<std::vector<TarMember>> ListTar(absl::string_view data) {
  std::vector<TarMember> members;
  size_t off = 0;
  while (off + 512 <= data.size()) {
    const absl::string_view h = data.substr(off, 512);
    if (h.find_first_not_of('\0') == absl::string_view::npos) {
      break;  // end-of-archive block
    }
    if (h.substr(257, 5) != "ustar") {
      return absl::InvalidArgumentError("not a tar archive (no ustar header)");
    }
    std::string name(h.substr(0, 100).data(),
                     strnlen(h.substr(0, 100).data(), 100));
    const std::string prefix(h.substr(345, 155).data(),
                             strnlen(h.substr(345, 155).data(), 155));
    if (!prefix.empty()) {
      name = absl::StrCat(prefix, "/", name);
    }
    uint64_t size = 0;
    for (char c : h.substr(124, 12)) {
      if (c >= '0' && c <= '7') {
        size = size * 8 + static_cast<uint64_t>(c - '0');
      }
    }
    const char type = h[156];
    off += 512;
    if (off + size > data.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tar member ", name, " is truncated"));
    }
    if (type == '0' || type == '\0') {
      members.push_back({name, data.substr(off, size)});
    }
    off += (size + 511) / 512 * 512;
  }
  return members;
}

}  // namespace pilotlight::sim
