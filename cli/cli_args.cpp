#include "cli/cli_args.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/error.h"
#include "core/json_cursor.h"
#include "core/strategy.h"

namespace replisim::cli {
namespace {

using core::InputError;

const std::vector<std::string> kCommands = {"simulate", "plan", "help", "version"};

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

}  // namespace

std::string usage_text() {
  return "usage:\n"
         "  replisim simulate SCENARIO [--strategy in_graph|between_graph|both] [--seed N]\n"
         "                    [--json FILE] [--trace FILE] [--force]\n"
         "  replisim plan SCENARIO [--strategy in_graph|between_graph|both] [--seed N] [--json]\n"
         "  replisim --version | --help\n"
         "\n"
         "simulate  predicts each strategy with SimGrid and prints a side-by-side report;\n"
         "          --json writes the summary, --trace a Chrome trace (Perfetto);\n"
         "          existing files are kept unless --force is given.\n"
         "plan      prints the compiled plan (--json: the plan data, an array for 'both').\n"
         "exit codes: 0 success, 2 bad input, 1 internal error. Docs: docs/cli.md\n";
}

CliArgs parse_cli_args(int argc, const char* const* argv) {
  CliArgs args;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) args.command_line += " ";
    args.command_line += shell_quote(argv[i]);
  }
  std::vector<std::string> words(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (words.empty()) throw InputError("", "", "no command given; run replisim --help");
  const std::string& first = words.front();
  if (first == "--help" || first == "-h" || first == "help" || first == "--version" ||
      first == "version") {
    if (words.size() > 1) throw InputError("", words[1], "unexpected argument after " + first);
    args.command = first.find("version") != std::string::npos ? "version" : "help";
    return args;
  }
  if (first != "simulate" && first != "plan") {
    const std::string near = core::nearest_name(first, kCommands);
    throw InputError("", first,
                     "unknown command" +
                         (near.empty() ? std::string("") : "; did you mean " + near + "?") +
                         " (commands: simulate, plan, --version, --help)");
  }
  args.command = first;
  const bool simulate = first == "simulate";
  std::vector<std::string> flags = {"--strategy", "--seed", "--json", "--help"};
  if (simulate) {
    flags.push_back("--trace");
    flags.push_back("--force");
  }
  std::vector<std::string> seen;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.size() > 1 && w[0] == '-') {
      if (std::find(seen.begin(), seen.end(), w) != seen.end()) {
        throw InputError("", w, "given twice");
      }
      seen.push_back(w);
    }
    auto value = [&](const std::string& flag) {
      if (i + 1 >= words.size()) throw InputError("", flag, "needs a value");
      return words[++i];
    };
    if (w == "--help" || w == "-h") {
      args.command = "help";
      return args;
    } else if (w == "--strategy") {
      args.strategy = value(w);
      if (args.strategy != "both" && core::find_strategy(args.strategy) == nullptr) {
        throw InputError(
            "", "--strategy",
            "unknown strategy \"" + args.strategy + "\"; valid: in_graph, between_graph, both");
      }
    } else if (w == "--seed") {
      args.seed = parse_seed(value(w));
    } else if (w == "--json" && simulate) {
      args.json_path = value(w);
      if (args.json_path.empty()) throw InputError("", w, "needs a file name, got an empty one");
    } else if (w == "--json") {
      args.json_stdout = true;
    } else if (w == "--trace" && simulate) {
      args.trace_path = value(w);
      if (args.trace_path.empty()) throw InputError("", w, "needs a file name, got an empty one");
    } else if (w == "--force" && simulate) {
      args.force = true;
    } else if (w.size() > 1 && w[0] == '-') {
      const std::string near = core::nearest_name(w, flags);
      throw InputError("", w,
                       "unknown flag for " + first +
                           (near.empty() ? "; flags: " + core::join_names(flags)
                                         : "; did you mean " + near + "?"));
    } else if (args.scenario.empty()) {
      args.scenario = w;
    } else {
      throw InputError("", w, "unexpected argument (one scenario file per run)");
    }
  }
  if (args.scenario.empty()) throw InputError("", "", first + " needs a SCENARIO file");
  return args;
}

std::vector<std::string> selected_strategies(const CliArgs& args) {
  if (args.strategy == "both") return core::strategy_names();
  return {args.strategy};
}

}  // namespace replisim::cli
