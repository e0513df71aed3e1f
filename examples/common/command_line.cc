#include "examples/common/command_line.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <utility>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace example_cli {
namespace {

std::string& ProgramNameStorage() {
  static std::string* name = new std::string("program");
  return *name;
}

// What a help flag asked for.
struct HelpRequest {
  enum Kind { kNone, kOwn, kFull, kMatch, kOn };
  Kind kind = kNone;
  std::string text;  // kMatch, kOn
};

// Flags Abseil itself defines (--flagfile, --fromenv, --tryfromenv,
// --undefok): listed by --helpfull only.
bool IsAbseilFlag(const absl::CommandLineFlag& flag) {
  return absl::StrContains(flag.Filename(), "absl/flags/");
}

// --help and its relatives, which Abseil does not model as flags (so they
// are not found by name). False when `name` is none of them.
bool ParseHelpFlag(absl::string_view name, absl::string_view value, HelpRequest& help) {
  if (name == "help" || name == "h" || name == "helpshort" || name == "helppackage") {
    if (value.empty()) {
      help.kind = HelpRequest::kOwn;
    } else {  // --help=TEXT, as Abseil: the flags matching TEXT
      help.kind = HelpRequest::kMatch;
      help.text = std::string(value);
    }
    return true;
  }
  if (name == "helpfull") {
    help.kind = HelpRequest::kFull;
    return true;
  }
  if (name == "helpon" || name == "helpmatch") {
    help.kind = name == "helpon" ? HelpRequest::kOn : HelpRequest::kMatch;
    help.text = std::string(value);
    return true;
  }
  return false;
}

bool Shows(const absl::CommandLineFlag& flag, const HelpRequest& help) {
  if (flag.IsRetired()) return false;
  switch (help.kind) {
    case HelpRequest::kFull:
      return true;
    case HelpRequest::kOn:
      return absl::StrContains(flag.Filename(), absl::StrCat("/", help.text, "."));
    case HelpRequest::kMatch:
      return absl::StrContains(flag.Filename(), help.text) ||
             absl::StrContains(flag.Name(), help.text);
    default:
      return !IsAbseilFlag(flag);
  }
}

// `text` in lines of at most 80 columns (longer words stay whole), each
// after `indent`.
std::string Wrap(absl::string_view text, absl::string_view indent) {
  constexpr size_t kWidth = 80;
  std::string out;
  size_t column = 0;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (column > 0 && column + 1 + word.size() > kWidth) {
      out += "\n";
      column = 0;
    }
    if (column == 0) {
      absl::StrAppend(&out, indent, word);
      column = indent.size() + word.size();
    } else {
      absl::StrAppend(&out, " ", word);
      column += 1 + word.size();
    }
  }
  return out + "\n";
}

std::string HelpText(const HelpRequest& help) {
  std::string text(absl::StripTrailingAsciiWhitespace(absl::ProgramUsageMessage()));
  absl::StrAppend(&text, "\n\nFlags:\n");
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (Shows(*flag, help)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(), [](const auto* a, const auto* b) {
    return a->Name() < b->Name();
  });
  for (const absl::CommandLineFlag* flag : flags) {
    const bool is_bool = flag->IsOfType<bool>();
    std::string default_value = flag->DefaultValue();
    if (flag->IsOfType<std::string>()) default_value = absl::StrCat("\"", default_value, "\"");
    absl::StrAppend(&text, "  --", is_bool ? "[no]" : "", flag->Name(), " (default ",
                    default_value, ")\n", Wrap(flag->Help(), "      "));
  }
  if (flags.empty()) {
    absl::StrAppend(&text, help.kind == HelpRequest::kOwn ? "  (none)\n" : "  (none match)\n");
  }
  absl::StrAppend(&text, "\n",
                  Wrap("--help: this text; --helpfull: also Abseil's flags (--flagfile, "
                       "--fromenv, --undefok...). Bad usage exits 2.",
                       ""));
  return text;
}

[[noreturn]] void Exit(int code, FILE* stream, const std::string& text) {
  std::fputs(text.c_str(), stream);
  std::fflush(stream);
  std::exit(code);
}

// A problem with one argument, found while checking the command line.
struct ArgError {
  int index;             // in argv, for reporting the first one
  std::string message;   // "--name: what is wrong"
  std::string unknown;   // the flag name when the flag is unknown (--undefok may allow it)
};

// Whether --undefok (as parsed so far) lets the unknown flag `name` pass,
// as Abseil decides it: the name, or the name without a leading "no".
bool UndefinedFlagIsOk(absl::string_view name) {
  absl::CommandLineFlag* undefok = absl::FindCommandLineFlag("undefok");
  if (undefok == nullptr) return false;
  const absl::optional<std::vector<std::string>> names =
      undefok->TryGet<std::vector<std::string>>();
  if (!names.has_value()) return false;
  auto listed = [&](absl::string_view n) {
    return std::find(names->begin(), names->end(), n) != names->end();
  };
  return listed(name) || (absl::ConsumePrefix(&name, "no") && listed(name));
}

// Checks argv against the registered flags, with absl::ParseCommandLine's
// syntax, setting the value of every flag given (absl::ParseCommandLine
// sets them again). Returns the first problem in argv order, if any; fills
// `help` when help was asked for.
std::optional<ArgError> CheckFlags(int argc, char** argv, HelpRequest& help) {
  std::vector<ArgError> errors;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    // Not a flag: an argument ("-" too).
    if (!absl::ConsumePrefix(&arg, "-") || arg.empty()) continue;
    absl::ConsumePrefix(&arg, "-");
    const size_t equals = arg.find('=');
    const absl::string_view name = arg.substr(0, equals);
    // "--" (or "--=..."): the end of the flags.
    if (name.empty()) break;
    const bool has_value = equals != absl::string_view::npos;
    const absl::string_view value = has_value ? arg.substr(equals + 1) : absl::string_view();

    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    bool negative = false;
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      negative = flag != nullptr;
    }
    if (flag == nullptr) {
      if (ParseHelpFlag(name, value, help)) continue;
      // Handled by absl::ParseCommandLine: exits 0.
      if (name == "version" || name == "only_check_args") continue;
      errors.push_back({i, absl::StrCat("--", name, ": unknown flag (--help lists them)"),
                        std::string(name)});
      continue;
    }
    const std::string shown = absl::StrCat("--", name);
    std::string flag_value;
    if (flag->IsOfType<bool>()) {
      if (!has_value) {
        flag_value = negative ? "false" : "true";
      } else if (negative) {
        errors.push_back({i, absl::StrCat(shown, ": the --no form of a flag takes no value"), ""});
        continue;
      } else if (value.empty()) {
        errors.push_back({i, absl::StrCat(shown, ": missing value after \"=\""), ""});
        continue;
      } else {
        flag_value = std::string(value);
      }
    } else if (negative) {
      errors.push_back(
          {i, absl::StrCat(shown, ": --", flag->Name(), " is not a boolean flag"), ""});
      continue;
    } else if (has_value) {
      flag_value = std::string(value);
    } else if (i + 1 < argc) {
      flag_value = argv[++i];  // "--flag value"
    } else {
      errors.push_back({i, absl::StrCat(shown, ": missing value"), ""});
      continue;
    }
    // Reading a flagfile or the environment happens once, in
    // absl::ParseCommandLine (setting these flags here would read them
    // twice); a flagfile that cannot be read is a usage error here.
    if (name == "flagfile") {
      for (absl::string_view file : absl::StrSplit(flag_value, ',', absl::SkipEmpty())) {
        if (std::ifstream(std::string(file)).fail()) {
          errors.push_back({i, absl::StrCat(shown, ": cannot read \"", file, "\""), ""});
          break;
        }
      }
      continue;
    }
    if (name == "fromenv" || name == "tryfromenv") continue;
    if (flag->IsRetired()) continue;  // accepted and ignored, as Abseil does
    std::string error;
    if (!flag->ParseFrom(flag_value, &error)) {
      std::string message = absl::StrCat(shown, ": invalid value \"", flag_value, "\"");
      // Abseil's reason, when it gives one, follows "; ".
      if (const size_t reason = error.find("; "); reason != std::string::npos) {
        absl::StrAppend(&message, ": ", error.substr(reason + 2));
      }
      errors.push_back({i, std::move(message), ""});
    }
  }
  for (const ArgError& error : errors) {
    if (!error.unknown.empty() && UndefinedFlagIsOk(error.unknown)) continue;
    return error;
  }
  return std::nullopt;
}

}  // namespace

const std::string& ProgramName() { return ProgramNameStorage(); }

void SetProgramName(const char* argv0) {
  if (argv0 == nullptr) return;
  absl::string_view name = argv0;
  if (const size_t slash = name.rfind('/'); slash != absl::string_view::npos) {
    name.remove_prefix(slash + 1);
  }
  if (!name.empty()) ProgramNameStorage() = std::string(name);
}

int UsageError(absl::string_view message) {
  std::fprintf(stderr, "%s: %s\n", ProgramName().c_str(), std::string(message).c_str());
  std::fflush(stderr);
  return kUsageExitCode;
}

std::vector<std::string> ParseFlagsOrExit(int argc, char** argv, absl::string_view usage,
                                          Args args) {
  if (argc > 0) SetProgramName(argv[0]);
  absl::SetProgramUsageMessage(usage);
  HelpRequest help;
  const std::optional<ArgError> error = CheckFlags(argc, argv, help);
  if (help.kind != HelpRequest::kNone) Exit(0, stdout, HelpText(help));
  if (error.has_value()) std::exit(UsageError(error->message));

  const std::vector<char*> parsed = absl::ParseCommandLine(argc, argv);
  std::vector<std::string> positional(parsed.begin() + (parsed.empty() ? 0 : 1), parsed.end());
  if (args == Args::kNone && !positional.empty()) {
    std::exit(UsageError(absl::StrCat("unexpected argument \"", positional[0],
                                      "\" (this program takes flags only; --help lists them)")));
  }
  return positional;
}

}  // namespace example_cli
