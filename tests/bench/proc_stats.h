// What the benchmarks read of a process from /proc: CPU seconds and
// resident memory.
#pragma once

#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/files.h"

namespace pilotlight::bench {

using testutil::ReadFile;

// utime + stime of `pid`, in seconds; -1 when unreadable.
inline double ProcessCpu(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const std::vector<std::string> f =
      absl::StrSplit(stat.substr(stat.rfind(')') + 2), ' ');
  double ut = 0;
  double st = 0;
  if (f.size() < 13 || !absl::SimpleAtod(f[11], &ut) ||
      !absl::SimpleAtod(f[12], &st)) {
    return -1;
  }
  return (ut + st) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Resident memory of `pid` in MiB; -1 when unreadable.
inline double RssMiB(pid_t pid) {
  for (absl::string_view line :
       absl::StrSplit(ReadFile(absl::StrCat("/proc/", pid, "/status")), '\n')) {
    if (absl::ConsumePrefix(&line, "VmRSS:")) {
      double kb = 0;
      (void)absl::SimpleAtod(
          absl::StripAsciiWhitespace(line.substr(0, line.rfind("kB"))), &kb);
      return kb / 1024;
    }
  }
  return -1;
}

}  // namespace pilotlight::bench
