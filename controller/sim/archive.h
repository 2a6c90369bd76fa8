// The containers traces come in: gzip (every concatenated member) and tar
// (ustar/GNU), read whole.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pilotlight::sim {

// Reads the whole file, gunzipping when it starts with the gzip magic.
absl::StatusOr<std::string> ReadMaybeGzip(const std::string& path);
// `data` gunzipped (every concatenated member) when it starts with the gzip
// magic, else as it is; `name` is for the error message.
absl::StatusOr<std::string> MaybeGunzip(std::string data,
                                        absl::string_view name);

// The members of a tar archive (ustar/GNU), as (name, contents) views into
// `data`. Error when `data` is not a tar archive.
struct TarMember {
  std::string name;
  absl::string_view data;
};
absl::StatusOr<std::vector<TarMember>> ListTar(absl::string_view data);

}  // namespace pilotlight::sim
