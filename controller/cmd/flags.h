// A small command-line parser for subcommands: `--name value`,
// `--name=value` and boolean `--name`. Each subcommand declares its flags;
// anything else is a usage error that lists what is accepted.
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace pilotlight::cmd {

struct FlagSpec {
  std::string name;  // without the leading "--"
  bool is_bool = false;
  std::string value_name;  // e.g. "N", "FILE", "DURATION"
  std::string help;
};

class ParsedFlags {
 public:
  bool Has(absl::string_view name) const;
  bool Bool(absl::string_view name) const { return Has(name); }
  std::optional<std::string> String(absl::string_view name) const;
  // Each parser returns InvalidArgument naming the flag and the value.
  absl::StatusOr<std::optional<double>> Double(absl::string_view name) const;
  absl::StatusOr<std::optional<int>> Int(absl::string_view name) const;
  // Accepts "80ms", "2s", "1.5s" (absl::ParseDuration) or a bare number of
  // seconds.
  absl::StatusOr<std::optional<absl::Duration>> Duration(
      absl::string_view name) const;

 private:
  friend absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>&,
                                                const std::vector<FlagSpec>&);
  std::map<std::string, std::string, std::less<>> values_;
};

absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args,
                                       const std::vector<FlagSpec>& specs);

// Copies a parsed flag into `target` when it was given; passes a parse
// error through.
template <typename T>
absl::Status Set(const absl::StatusOr<std::optional<T>>& v, T& target) {
  if (!v.ok()) {
    return v.status();
  }
  if (v->has_value()) {
    target = **v;
  }
  return absl::OkStatus();
}

// The same into an optional (left empty when the flag was not given).
template <typename T>
absl::Status Set(const absl::StatusOr<std::optional<T>>& v,
                 std::optional<T>& target) {
  if (!v.ok()) {
    return v.status();
  }
  target = *v;
  return absl::OkStatus();
}

// "  --name VALUE   help" lines, aligned.
std::string FlagsHelp(const std::vector<FlagSpec>& specs);

// What every command does first: parses `args` into `parsed`. With --help
// it prints `usage` and the flags to `out` and returns 0; with a bad flag,
// the error, `usage` and the flags to `err`, and returns 2 -- the exit code
// to return at once. nullopt: carry on. (Declare a "help" flag in `specs`.)
std::optional<int> ParseFlagsOrExit(const std::vector<std::string>& args,
                                    const std::vector<FlagSpec>& specs,
                                    absl::string_view usage, std::ostream& out,
                                    std::ostream& err, ParsedFlags& parsed);

}  // namespace pilotlight::cmd
