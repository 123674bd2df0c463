#include "cli/cli_args.h"

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
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      text.size() > 19) {
    throw InputError("", "--seed", "expected a non-negative integer, got \"" + text + "\"");
  }
  return std::strtoull(text.c_str(), nullptr, 10);
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
  if (first == "--help" || first == "-h" || first == "help") {
    args.command = "help";
    return args;
  }
  if (first == "--version" || first == "version") {
    args.command = "version";
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
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
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
    } else if (w == "--json") {
      args.json_stdout = true;
    } else if (w == "--trace" && simulate) {
      args.trace_path = value(w);
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
  for (const std::string* out : {&args.json_path, &args.trace_path}) {
    if (!out->empty() && *out == args.scenario) {
      throw InputError(*out, "", "an output file must not be the scenario file");
    }
  }
  if (!args.json_path.empty() && args.json_path == args.trace_path) {
    throw InputError(args.json_path, "", "--json and --trace name the same file");
  }
  return args;
}

std::vector<std::string> selected_strategies(const CliArgs& args) {
  if (args.strategy == "both") return core::strategy_names();
  return {args.strategy};
}

}  // namespace replisim::cli
