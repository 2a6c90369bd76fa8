#include "controller/cmd/flags.h"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace pilotlight::cmd {
namespace {

const FlagSpec* FindSpec(const std::vector<FlagSpec>& specs,
                         absl::string_view name) {
  for (const FlagSpec& s : specs) {
    if (s.name == name) {
      return &s;
    }
  }
  return nullptr;
}

std::string KnownFlags(const std::vector<FlagSpec>& specs) {
  return absl::StrJoin(specs, " ", [](std::string* out, const FlagSpec& s) {
    absl::StrAppend(out, "--", s.name);
  });
}

}  // namespace

bool ParsedFlags::Has(absl::string_view name) const {
  return values_.find(name) != values_.end();
}

std::optional<std::string> ParsedFlags::String(absl::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    return std::nullopt;
  }
  return it->second;
}

absl::StatusOr<std::optional<double>> ParsedFlags::Double(
    absl::string_view name) const {
  std::optional<std::string> s = String(name);
  if (!s) {
    return std::optional<double>();
  }
  double v = 0;
  if (!absl::SimpleAtod(*s, &v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": \"", *s, "\" is not a number"));
  }
  return std::optional<double>(v);
}

absl::StatusOr<std::optional<int>> ParsedFlags::Int(
    absl::string_view name) const {
  std::optional<std::string> s = String(name);
  if (!s) {
    return std::optional<int>();
  }
  int v = 0;
  if (!absl::SimpleAtoi(*s, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": \"", *s, "\" is not an integer"));
  }
  return std::optional<int>(v);
}

absl::StatusOr<std::optional<absl::Duration>> ParsedFlags::Duration(
    absl::string_view name) const {
  std::optional<std::string> s = String(name);
  if (!s) {
    return std::optional<absl::Duration>();
  }
  absl::Duration d;
  double seconds = 0;
  if (absl::ParseDuration(*s, &d)) {
    return std::optional<absl::Duration>(d);
  }
  if (absl::SimpleAtod(*s, &seconds) && std::isfinite(seconds)) {
    return std::optional<absl::Duration>(absl::Seconds(seconds));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--", name, ": \"", *s, "\" is not a duration (e.g. 80ms, 2s, 1.5)"));
}

absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args,
                                       const std::vector<FlagSpec>& specs) {
  ParsedFlags out;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument \"", arg, "\" (flags start with --)"));
    }
    arg.remove_prefix(2);
    std::string name(arg);
    std::optional<std::string> value;
    if (size_t eq = arg.find('='); eq != absl::string_view::npos) {
      name = std::string(arg.substr(0, eq));
      value = std::string(arg.substr(eq + 1));
    }
    const FlagSpec* spec = FindSpec(specs, name);
    if (spec == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag --", name, " (known: ", KnownFlags(specs), ")"));
    }
    if (spec->is_bool) {
      if (value && *value != "true" && *value != "false") {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " takes no value"));
      }
      if (!value || *value == "true") {
        out.values_[name] = "true";
      } else {
        out.values_.erase(name);
      }
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", name, " needs a value (", spec->value_name, ")"));
      }
      value = args[++i];
    }
    out.values_[name] = *value;
  }
  return out;
}

std::string FlagsHelp(const std::vector<FlagSpec>& specs) {
  size_t width = 0;
  std::vector<std::string> heads;
  for (const FlagSpec& s : specs) {
    heads.push_back(s.is_bool ? absl::StrCat("--", s.name)
                              : absl::StrCat("--", s.name, " ", s.value_name));
    width = std::max(width, heads.back().size());
  }
  std::string out;
  for (size_t i = 0; i < specs.size(); ++i) {
    absl::StrAppend(&out, "  ", heads[i],
                    std::string(width + 2 - heads[i].size(), ' '),
                    specs[i].help, "\n");
  }
  return out;
}

std::optional<int> ParseFlagsOrExit(const std::vector<std::string>& args,
                                    const std::vector<FlagSpec>& specs,
                                    absl::string_view usage, std::ostream& out,
                                    std::ostream& err, ParsedFlags& parsed) {
  absl::StatusOr<ParsedFlags> f = ParseFlags(args, specs);
  if (!f.ok()) {
    err << f.status().message() << "\n" << usage << FlagsHelp(specs);
    return 2;
  }
  if (f->Bool("help")) {
    out << usage << FlagsHelp(specs);
    return 0;
  }
  parsed = *std::move(f);
  return std::nullopt;
}

}  // namespace pilotlight::cmd
