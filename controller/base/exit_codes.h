// The process exit codes every `pilotlight` subcommand and test tool uses.
#pragma once

namespace pilotlight {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;  // a bug or an environment failure
inline constexpr int kExitUsage = 2;     // bad flags, names or numbers
inline constexpr int kExitNoOption = 3;  // valid request, nothing meets it

}  // namespace pilotlight
