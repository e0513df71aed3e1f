// File: examples/common/command_line.h
//
// The command line of every binary here (the cache service's tools, the
// goodput experiment, the benchmarks), on top of Abseil flags, with one set
// of conventions:
//
//   --help, -h, --helpshort, --helppackage
//                      the usage message and the program's own flags on
//                      stdout; exit 0
//   --helpfull         the same plus Abseil's flags (--flagfile, --fromenv...)
//   --helpon=FILE, --helpmatch=TEXT
//                      the flags defined in FILE (its name without directory
//                      and extension) / in files or with names containing TEXT
//   an unknown flag, a bad or missing value, a stray argument
//                      one line on stderr naming the flag, "PROGRAM: --flag:
//                      what is wrong"; exit 2
//
// absl::ParseCommandLine (Abseil 20220623) exits 1 for a help request and
// for a bad flag alike, and prints several lines for the latter. Here the
// command line is checked first with the public flag reflection API
// (absl::FindCommandLineFlag, CommandLineFlag::ParseFrom), following the
// syntax absl::ParseCommandLine accepts: --flag=value, -flag=value,
// --flag value (not for bool flags), --flag / --noflag for bool flags, flags
// anywhere among the arguments, "--" ending them, and --undefok. Then
// absl::ParseCommandLine does the parsing proper (which reads --flagfile and
// --fromenv; flags read from a flagfile or the environment are checked only
// by Abseil, which exits 1 on a bad one).
//
// Example:
//   int main(int argc, char** argv) {
//     std::vector<std::string> args = example_cli::ParseFlagsOrExit(
//         argc, argv, "frob [--level=N] FILE...", example_cli::Args::kAllowed);
//     if (args.empty()) return example_cli::UsageError("missing FILE");
//     ...
//   }

#ifndef GRPC_RESILIENCE_EXAMPLES_COMMON_COMMAND_LINE_H_
#define GRPC_RESILIENCE_EXAMPLES_COMMON_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace example_cli {

// The exit status of every usage error.
inline constexpr int kUsageExitCode = 2;

// Whether the program takes arguments besides flags.
enum class Args { kNone, kAllowed };

// ParseFlagsOrExit()
//
// Sets `usage` as the program usage message (absl::SetProgramUsageMessage;
// call once per process), parses the flags, and returns the arguments that
// are not flags, in order, without argv[0]. Exits 0 after printing help
// when asked for it, and kUsageExitCode with one line on stderr for an
// unknown flag, a bad value, or (with Args::kNone) any argument.
std::vector<std::string> ParseFlagsOrExit(int argc, char** argv, absl::string_view usage,
                                          Args args = Args::kNone);

// ProgramName()
//
// The base name of argv[0] as ParseFlagsOrExit() saw it ("cache_server");
// "program" before it was called.
const std::string& ProgramName();

// SetProgramName()
//
// Sets ProgramName() from `argv0`, for a binary whose flags are not Abseil's
// (ParseFlagsOrExit() does it).
void SetProgramName(const char* argv0);

// UsageError()
//
// Prints "PROGRAM: message" on stderr and returns kUsageExitCode, for the
// program's own checks of flag values and arguments:
//   if (port > 65535) return example_cli::UsageError("--port: must be ...");
int UsageError(absl::string_view message);

}  // namespace example_cli

#endif  // GRPC_RESILIENCE_EXAMPLES_COMMON_COMMAND_LINE_H_
