#include "controller/cmd/flags.h"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

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
  // Days, which Go's duration syntax lacks and a trace's span needs.
  double days = 0;
  absl::string_view number = *s;
  if (absl::ConsumeSuffix(&number, "d") && absl::SimpleAtod(number, &days) &&
      std::isfinite(days)) {
    return std::optional<absl::Duration>(absl::Hours(24 * days));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--", name, ": \"", *s, "\" is not a duration (e.g. 80ms, 2s, 1.5, 3d)"));
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

std::string FlagsHelp(const std::vector<FlagSpec>& specs,
                      const std::vector<std::string>& defaults) {
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
                    specs[i].help,
                    i < defaults.size() && !defaults[i].empty()
                        ? absl::StrCat(" (default ", defaults[i], ")")
                        : "",
                    "\n");
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

namespace {

std::string DefaultText(const std::string& v) { return v; }
std::string DefaultText(int v) { return absl::StrCat(v); }
std::string DefaultText(double v) { return absl::StrCat(v); }
std::string DefaultText(absl::Duration v) { return absl::FormatDuration(v); }

// The typed getter of ParsedFlags for a target's type.
absl::StatusOr<std::optional<std::string>> Get(const ParsedFlags& f,
                                               absl::string_view name,
                                               const std::string*) {
  return f.String(name);
}
absl::StatusOr<std::optional<int>> Get(const ParsedFlags& f,
                                       absl::string_view name, const int*) {
  return f.Int(name);
}
absl::StatusOr<std::optional<double>> Get(const ParsedFlags& f,
                                          absl::string_view name,
                                          const double*) {
  return f.Double(name);
}
absl::StatusOr<std::optional<absl::Duration>> Get(const ParsedFlags& f,
                                                  absl::string_view name,
                                                  const absl::Duration*) {
  return f.Duration(name);
}

template <typename T>
std::function<absl::Status(const ParsedFlags&)> BindTo(std::string name,
                                                       T* target) {
  return [name = std::move(name), target](const ParsedFlags& f) {
    return Set(Get(f, name, target), *target);
  };
}

template <typename T>
std::function<absl::Status(const ParsedFlags&)> BindOptional(
    std::string name, std::optional<T>* target) {
  return [name = std::move(name), target](const ParsedFlags& f) {
    const T* type = nullptr;
    auto v = Get(f, name, type);
    if (!v.ok()) {
      return v.status();
    }
    if (v->has_value()) {
      *target = **v;
    }
    return absl::OkStatus();
  };
}

}  // namespace

FlagSet& FlagSet::Declare(std::string name, bool is_bool,
                          std::string value_name, std::string help,
                          std::string default_text, Setter set) {
  specs_.push_back({.name = std::move(name),
                    .is_bool = is_bool,
                    .value_name = std::move(value_name),
                    .help = std::move(help)});
  setters_.push_back(std::move(set));
  defaults_.push_back(std::move(default_text));
  return *this;
}

template <typename T>
FlagSet& FlagSet::AddValue(std::string name, T* target, std::string value_name,
                           std::string help) {
  return Declare(name, false, std::move(value_name), std::move(help),
                 DefaultText(*target), BindTo(name, target));
}

template <typename T>
FlagSet& FlagSet::AddOptional(std::string name, std::optional<T>* target,
                              std::string value_name, std::string help) {
  return Declare(name, false, std::move(value_name), std::move(help),
                 target->has_value() ? DefaultText(**target) : "",
                 BindOptional(name, target));
}

FlagSet& FlagSet::Add(std::string name, std::string* target,
                      std::string value_name, std::string help) {
  return AddValue(std::move(name), target, std::move(value_name),
                  std::move(help));
}
FlagSet& FlagSet::Add(std::string name, int* target, std::string value_name,
                      std::string help) {
  return AddValue(std::move(name), target, std::move(value_name),
                  std::move(help));
}
FlagSet& FlagSet::Add(std::string name, double* target, std::string value_name,
                      std::string help) {
  return AddValue(std::move(name), target, std::move(value_name),
                  std::move(help));
}
FlagSet& FlagSet::Add(std::string name, absl::Duration* target,
                      std::string value_name, std::string help) {
  return AddValue(std::move(name), target, std::move(value_name),
                  std::move(help));
}
FlagSet& FlagSet::Add(std::string name, std::optional<std::string>* target,
                      std::string value_name, std::string help) {
  return AddOptional(std::move(name), target, std::move(value_name),
                     std::move(help));
}
FlagSet& FlagSet::Add(std::string name, std::optional<int>* target,
                      std::string value_name, std::string help) {
  return AddOptional(std::move(name), target, std::move(value_name),
                     std::move(help));
}
FlagSet& FlagSet::Add(std::string name, std::optional<double>* target,
                      std::string value_name, std::string help) {
  return AddOptional(std::move(name), target, std::move(value_name),
                     std::move(help));
}
FlagSet& FlagSet::Add(std::string name, std::optional<absl::Duration>* target,
                      std::string value_name, std::string help) {
  return AddOptional(std::move(name), target, std::move(value_name),
                     std::move(help));
}

FlagSet& FlagSet::Switch(std::string name, bool* target, std::string help,
                         bool when_given) {
  Setter set = [name, target, when_given](const ParsedFlags& f) {
    if (f.Bool(name)) {
      *target = when_given;
    }
    return absl::OkStatus();
  };
  return Declare(std::move(name), true, "", std::move(help), "",
                 std::move(set));
}

FlagSet& FlagSet::Custom(std::string name, std::string value_name,
                         std::string help, std::string default_text,
                         std::function<absl::Status(const std::string&)> set) {
  Setter setter = [name, set = std::move(set)](const ParsedFlags& f) {
    const std::optional<std::string> v = f.String(name);
    return v ? set(*v) : absl::OkStatus();
  };
  return Declare(std::move(name), false, std::move(value_name), std::move(help),
                 std::move(default_text), std::move(setter));
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  if (std::none_of(specs_.begin(), specs_.end(),
                   [](const FlagSpec& s) { return s.name == "help"; })) {
    Switch("help", &help_, "show this help");
  }
  absl::StatusOr<ParsedFlags> f = ParseFlags(args, specs_);
  if (!f.ok()) {
    return f.status();
  }
  parsed_ = *std::move(f);
  for (const Setter& set : setters_) {
    if (absl::Status st = set(parsed_); !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

std::string FlagSet::Help() const {
  return absl::StrCat(usage_, FlagsHelp(specs_, defaults_));
}

std::optional<int> FlagSet::ParseOrExit(const std::vector<std::string>& args,
                                        std::ostream& out, std::ostream& err) {
  if (absl::Status st = Parse(args); !st.ok()) {
    err << command_ << ": " << st.message() << "\n" << Help();
    return 2;
  }
  if (help_) {
    out << Help();
    return 0;
  }
  return std::nullopt;
}

}  // namespace pilotlight::cmd
