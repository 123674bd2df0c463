#include "cli/cli_args.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>

#include "cli/progress.h"
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/units.h"
#include "core/strategy/strategy.h"

namespace replisim::cli {
namespace {

using core::InputError;

const std::vector<std::string> kCommands = {"simulate", "plan", "report", "help", "version"};

// The flags each command accepts, in the order messages list them.
std::vector<std::string> flags_of(const std::string& command) {
  if (command == "simulate") {
    return {"--strategy", "--seed",      "--json",   "--help",         "--trace",
            "--force",    "--trace-out", "--strict", "--trace-window", "--progress"};
  }
  if (command == "plan") return {"--strategy", "--seed", "--json", "--help"};
  return {"--json", "--csv", "--trace", "--force", "--help", "--trace-window"};
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_of(" \t\n'\"\\$`*?") == std::string::npos) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

uint64_t parse_seed(const std::string& text) {
  errno = 0;
  const uint64_t seed = std::strtoull(text.c_str(), nullptr, 10);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      errno == ERANGE) {
    throw InputError("", "--seed",
                     "expected an integer from 0 to 18446744073709551615, got \"" + text + "\"");
  }
  return seed;
}

// "FROM..UNTIL": two times ("30 s", "500 ms", or bare seconds), either may be empty (from the
// start, to the end); FROM <= UNTIL.
void parse_trace_window(CliArgs& args, const std::string& text) {
  const size_t dots = text.find("..");
  const std::string expected =
      "expected FROM..UNTIL in simulated time, each a time (30 s, 500 ms) or seconds (30), either "
      "left out for the start or the end (30..), got \"" +
      text + "\"";
  if (dots == std::string::npos || text.find("..", dots + 1) != std::string::npos) {
    throw InputError("", "--trace-window", expected);
  }
  auto time_at = [&](std::string part, double otherwise) {
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \t") + 1);
    if (part.empty()) return otherwise;
    const bool bare = part.find_first_not_of("0123456789.eE+-") == std::string::npos;
    double s = 0;
    try {
      s = core::parse_quantity(bare ? part + " s" : part, core::Dimension::kTime);
    } catch (const core::UnitError& e) {
      throw InputError("", "--trace-window",
                       "\"" + part + "\": " + (bare ? expected : std::string(e.what())));
    }
    if (s < 0)
      throw InputError("", "--trace-window", "\"" + part + "\": a time cannot be negative");
    return s + 0.0;  // -0 reads as 0
  };
  args.trace_from_s = time_at(text.substr(0, dots), 0.0);
  args.trace_until_s = time_at(text.substr(dots + 2), std::numeric_limits<double>::infinity());
  if (args.trace_from_s > args.trace_until_s) {
    throw InputError("", "--trace-window", "FROM is after UNTIL in \"" + text + "\"");
  }
  args.trace_window = true;
}

std::string file_name(const std::string& flag, const std::string& value) {
  if (value.empty()) throw InputError("", flag, "needs a file name, got an empty one");
  return value;
}

// Applies `flag`, one of flags_of(args.command); `value()` takes the word after it.
void apply_flag(CliArgs& args, const std::string& flag, const std::function<std::string()>& value) {
  if (flag == "--strategy") {
    args.strategy = value();
    if (args.strategy != "both" && core::find_strategy(args.strategy) == nullptr) {
      throw InputError(
          "", "--strategy",
          "unknown strategy \"" + args.strategy + "\"; valid: in_graph, between_graph, both");
    }
  } else if (flag == "--seed") {
    args.seed = parse_seed(value());
  } else if (flag == "--json" && args.command == "plan") {
    args.json_stdout = true;
  } else if (flag == "--json") {
    args.json_path = file_name(flag, value());
  } else if (flag == "--trace") {
    args.trace_path = file_name(flag, value());
  } else if (flag == "--trace-window") {
    parse_trace_window(args, value());
  } else if (flag == "--trace-out") {
    args.trace_out_path = file_name(flag, value());
  } else if (flag == "--csv") {
    args.csv_path = file_name(flag, value());
  } else if (flag == "--force") {
    args.force = true;
  } else if (flag == "--strict") {
    args.strict = true;
  } else if (flag == "--progress") {
    args.progress = value();
    parse_progress_mode(args.progress);  // rejects an unknown mode here, before any run
  }
}

void add_positional(CliArgs& args, const std::string& word) {
  if (args.command == "report") {
    args.trace_files.push_back(word);
  } else if (args.scenario.empty()) {
    args.scenario = word;
  } else {
    throw InputError("", word, "unexpected argument (one scenario file per run)");
  }
}

// Sets args.command from the first word, or throws for an unknown command.
void parse_command(CliArgs& args, const std::vector<std::string>& words) {
  if (words.empty()) throw InputError("", "", "no command given; run replisim --help");
  const std::string& first = words.front();
  if (first == "--help" || first == "-h" || first == "help" || first == "--version" ||
      first == "version") {
    if (words.size() > 1) throw InputError("", words[1], "unexpected argument after " + first);
    args.command = first.find("version") != std::string::npos ? "version" : "help";
    return;
  }
  if (first != "simulate" && first != "plan" && first != "report") {
    const std::string near = core::nearest_name(first, kCommands);
    throw InputError("", first,
                     "unknown command" +
                         (near.empty() ? std::string("") : "; did you mean " + near + "?") +
                         " (commands: simulate, plan, report, --version, --help)");
  }
  args.command = first;
}

}  // namespace

std::string usage_text() {
  return "usage:\n"
         "  replisim simulate SCENARIO [--strategy in_graph|between_graph|both] [--seed N]\n"
         "                    [--json FILE] [--trace FILE [--trace-window FROM..UNTIL]]\n"
         "                    [--trace-out FILE] [--force] [--strict]\n"
         "                    [--progress auto|bar|json|none]\n"
         "  replisim report TRACE... [--json FILE] [--csv FILE]\n"
         "                    [--trace FILE [--trace-window FROM..UNTIL]] [--force]\n"
         "  replisim plan SCENARIO [--strategy in_graph|between_graph|both] [--seed N] [--json]\n"
         "  replisim --version | --help\n"
         "\n"
         "simulate  predicts each strategy with SimGrid and prints a side-by-side report;\n"
         "          --json writes the summary, --trace a Chrome trace (Perfetto),\n"
         "          --trace-window keeps the Chrome trace to a span of simulated time;\n"
         "          --trace-out the native trace of the runs (for report);\n"
         "          --progress shows how far each run got (auto: a bar on a terminal);\n"
         "          existing files are kept unless --force is given.\n"
         "report    prints the same report from saved native traces, without simulating;\n"
         "          --csv writes their events as CSV.\n"
         "plan      prints the compiled plan (--json: the plan data, an array for 'both').\n"
         "exit codes: 0 success, 2 bad input, 1 a failed run, an output that cannot be written\n"
         "or an internal error, 130 cancelled (Ctrl-C). Docs: docs/cli.md\n";
}

CliArgs parse_cli_args(int argc, const char* const* argv) {
  CliArgs args;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) args.command_line += " ";
    args.command_line += shell_quote(argv[i]);
  }
  const std::vector<std::string> words(argv + (argc > 0 ? 1 : 0), argv + argc);
  parse_command(args, words);
  if (args.command == "help" || args.command == "version") return args;
  const std::vector<std::string> flags = flags_of(args.command);
  std::vector<std::string> seen;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.size() <= 1 || w[0] != '-') {
      add_positional(args, w);
      continue;
    }
    if (std::find(seen.begin(), seen.end(), w) != seen.end()) {
      throw InputError("", w, "given twice");
    }
    seen.push_back(w);
    if (w == "--help" || w == "-h") {
      args.command = "help";
      return args;
    }
    if (std::find(flags.begin(), flags.end(), w) == flags.end()) {
      const std::string near = core::nearest_name(w, flags);
      throw InputError("", w,
                       "unknown flag for " + args.command +
                           (near.empty() ? "; flags: " + core::join_names(flags)
                                         : "; did you mean " + near + "?"));
    }
    apply_flag(args, w, [&] {
      if (i + 1 >= words.size()) throw InputError("", w, "needs a value");
      return words[++i];
    });
  }
  if (args.trace_window && args.trace_path.empty()) {
    throw InputError("", "--trace-window", "limits the Chrome trace: give --trace FILE too");
  }
  if (args.command == "report" && args.trace_files.empty()) {
    throw InputError("", "", "report needs at least one TRACE file");
  }
  if (args.command != "report" && args.scenario.empty()) {
    throw InputError("", "", args.command + " needs a SCENARIO file");
  }
  return args;
}

std::vector<std::string> selected_strategies(const CliArgs& args) {
  if (args.strategy == "both") return core::strategy_names();
  return {args.strategy};
}

}  // namespace replisim::cli
