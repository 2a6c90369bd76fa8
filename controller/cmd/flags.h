// A small command-line parser for subcommands: `--name value`,
// `--name=value` and boolean `--name`. Each subcommand declares its flags;
// anything else is a usage error that lists what is accepted.
#pragma once

#include <functional>
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

// "  --name VALUE   help" lines, aligned; "(default X)" after the help of
// each flag whose `defaults` entry (parallel to `specs`, when given) is not
// empty.
std::string FlagsHelp(const std::vector<FlagSpec>& specs,
                      const std::vector<std::string>& defaults = {});

// What every command does first: parses `args` into `parsed`. With --help
// it prints `usage` and the flags to `out` and returns 0; with a bad flag,
// the error, `usage` and the flags to `err`, and returns 2 -- the exit code
// to return at once. nullopt: carry on. (Declare a "help" flag in `specs`.)
std::optional<int> ParseFlagsOrExit(const std::vector<std::string>& args,
                                    const std::vector<FlagSpec>& specs,
                                    absl::string_view usage, std::ostream& out,
                                    std::ostream& err, ParsedFlags& parsed);

// A command's flags, each declared once: its name, the value's name, its
// help and where its value goes. --help shows each flag's default: the
// target's value before parsing (none for an optional target, whose help
// says what its absence means). Targets are set in declaration order, after
// every flag has parsed; a value that does not parse is a usage error
// naming the flag.
//
//   FlagSet flags("pilotlight simulate",
//                 "usage: pilotlight simulate --trace FILE [flags]\n");
//   flags.Add("trace", &trace, "FILE", "request trace")
//       .Add("tick", &config.tick, "DURATION", "the policy's tick");
//   if (std::optional<int> exit = flags.ParseOrExit(args, out, err)) {
//     return *exit;
//   }
class FlagSet {
 public:
  // `command` opens each error message ("pilotlight simulate: ...").
  FlagSet(std::string command, std::string usage)
      : command_(std::move(command)), usage_(std::move(usage)) {}

  FlagSet& Add(std::string name, std::string* target, std::string value_name,
               std::string help);
  FlagSet& Add(std::string name, int* target, std::string value_name,
               std::string help);
  FlagSet& Add(std::string name, double* target, std::string value_name,
               std::string help);
  FlagSet& Add(std::string name, absl::Duration* target, std::string value_name,
               std::string help);
  FlagSet& Add(std::string name, std::optional<std::string>* target,
               std::string value_name, std::string help);
  FlagSet& Add(std::string name, std::optional<int>* target,
               std::string value_name, std::string help);
  FlagSet& Add(std::string name, std::optional<double>* target,
               std::string value_name, std::string help);
  FlagSet& Add(std::string name, std::optional<absl::Duration>* target,
               std::string value_name, std::string help);
  // A boolean flag: present sets *target to `when_given`.
  FlagSet& Switch(std::string name, bool* target, std::string help,
                  bool when_given = true);
  // A flag whose value `set` turns into its target (an enum, a list).
  FlagSet& Custom(std::string name, std::string value_name, std::string help,
                  std::string default_text,
                  std::function<absl::Status(const std::string&)> set);

  // Parses `args` into the targets. With --help prints the usage and the
  // flags to `out` and returns 0; with a bad flag or value, the error, the
  // usage and the flags to `err`, and returns 2; nullopt: carry on.
  std::optional<int> ParseOrExit(const std::vector<std::string>& args,
                                 std::ostream& out, std::ostream& err);
  // Parses `args` into the targets (no --help handling).
  absl::Status Parse(const std::vector<std::string>& args);
  // The usage and the flags, as --help prints them.
  std::string Help() const;
  // Whether the last parse was given flag `name`.
  bool Given(absl::string_view name) const { return parsed_.Has(name); }

 private:
  using Setter = std::function<absl::Status(const ParsedFlags&)>;
  FlagSet& Declare(std::string name, bool is_bool, std::string value_name,
                   std::string help, std::string default_text, Setter set);
  // The typed Add overloads: a value shown as its default, or an optional
  // (its default shown only when it holds one).
  template <typename T>
  FlagSet& AddValue(std::string name, T* target, std::string value_name,
                    std::string help);
  template <typename T>
  FlagSet& AddOptional(std::string name, std::optional<T>* target,
                       std::string value_name, std::string help);

  std::string command_;
  std::string usage_;
  std::vector<FlagSpec> specs_;
  std::vector<Setter> setters_;        // parallel to specs_
  std::vector<std::string> defaults_;  // parallel to specs_
  ParsedFlags parsed_;
  bool help_ = false;
};

}  // namespace pilotlight::cmd
