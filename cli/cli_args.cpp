#include "cli/cli_args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>

#include <CLI/CLI.hpp>

#include "cli/planning_args.h"
#include "cli/progress.h"
#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/units.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"

namespace replisim::cli {
namespace {

using core::InputError;

const std::vector<std::string> kCommands = {
    "simulate", "plan",   "report",    "run",   "node", "validate", "calibrate", "cleanup",
    "sweep",    "whatif", "recommend", "merge", "plot", "help",     "version"};

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

// simulate --seeds: "A..B" (A <= B), "a,b,c" (distinct) or a count N (`first` and up), at most
// kMaxSeeds seeds.
std::vector<uint64_t> parse_seed_list(const std::string& text, uint64_t first) {
  constexpr uint64_t kMaxSeeds = 1000;
  auto fail = [&text](const std::string& why) -> InputError {
    return InputError("", "--seeds", why + ", got \"" + text + "\"");
  };
  auto number = [&fail](const std::string& word) {
    try {
      return parse_seed(word);
    } catch (const InputError&) {
      throw fail("expected A..B, a list of seeds (1,4,9) or a count, each an integer");
    }
  };
  std::vector<uint64_t> seeds;
  const size_t dots = text.find("..");
  if (dots != std::string::npos) {
    const uint64_t from = number(text.substr(0, dots)), until = number(text.substr(dots + 2));
    if (until < from) throw fail("the range is empty (A..B needs A <= B)");
    if (until - from >= kMaxSeeds) throw fail("at most 1000 seeds");
    for (uint64_t s = from;; ++s) {
      seeds.push_back(s);
      if (s == until) break;
    }
    return seeds;
  }
  if (text.find(',') == std::string::npos) {
    const uint64_t count = number(text);
    if (count < 1 || count > kMaxSeeds) throw fail("a count of seeds from 1 to 1000");
    if (first > UINT64_MAX - (count - 1)) throw fail("the seeds run past 18446744073709551615");
    for (uint64_t k = 0; k < count; ++k) seeds.push_back(first + k);
    return seeds;
  }
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const uint64_t seed = number(text.substr(start, comma - start));
    if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end()) {
      throw fail("seed " + std::to_string(seed) + " is given twice");
    }
    seeds.push_back(seed);
    if (seeds.size() > kMaxSeeds) throw fail("at most 1000 seeds");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return seeds;
}

// An integer in [lo, hi] for `flag`.
int parse_int(const std::string& flag, const std::string& text, int lo, int hi) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || value < lo || value > hi) {
    throw InputError("", flag,
                     "expected an integer from " + std::to_string(lo) + " to " +
                         std::to_string(hi) + ", got \"" + text + "\"");
  }
  return int(value);
}

// --scale-compute: a factor in [1e-9, 1e9].
double parse_scale(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value < 1e-9 || value > 1e9) {
    throw InputError("", "--scale-compute",
                     "expected a factor from 1e-9 to 1e9 (0.01: a hundredth of every op's "
                     "FLOP), got \"" +
                         text + "\"");
  }
  return value;
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

// Values kept as typed by CLI11, checked here so that every message names its flag.
struct RawValues {
  std::string seed, steps, scale, window, strategy, threads, connect_timeout, listen_fd,
      progress_fd, base_port, isolate, repeat, tolerance, seeds, max_plan_ops, max_plan_memory,
      probe_seconds;
  PlanningRaw planning;
};

void add_plan_knobs(CLI::App* sub, RawValues& raw, const char* default_strategy = "both") {
  sub->add_option("--strategy", raw.strategy,
                  core::strategy_list_help() + " (default " + default_strategy + ")")
      ->type_name("NAMES");
  sub->add_option("--seed", raw.seed, "seed of the start-up stagger and jitter draws (default 1)")
      ->type_name("N");
  sub->add_option("--steps", raw.steps, "steps to train instead of the scenario's training.steps")
      ->type_name("N");
  sub->add_option("--scale-compute", raw.scale,
                  "multiply every op's FLOP by F (a large model on a small machine)")
      ->type_name("F");
  sub->add_option("--max-plan-ops", raw.max_plan_ops,
                  "refuse a plan estimated above N ops (default 10000000)")
      ->type_name("N");
  sub->add_option("--max-plan-memory", raw.max_plan_memory,
                  "refuse a plan estimated above SIZE of memory (default \"4 GiB\")")
      ->type_name("SIZE");
}

// --max-plan-ops, --max-plan-memory.
void parse_plan_budget(CliArgs& args, const RawValues& raw) {
  if (!raw.max_plan_ops.empty()) {
    char* end = nullptr;
    errno = 0;
    const double n = std::strtod(raw.max_plan_ops.c_str(), &end);
    if (*end != '\0' || errno == ERANGE || !(n >= 1000 && n <= 1e12) || std::floor(n) != n) {
      throw InputError(
          "", "--max-plan-ops",
          "expected a whole number of ops from 1000 to 1e12, got \"" + raw.max_plan_ops + "\"");
    }
    args.plan_budget.max_ops = n;
  }
  if (!raw.max_plan_memory.empty()) {
    double bytes = 0;
    try {
      bytes = core::parse_quantity(raw.max_plan_memory, core::Dimension::kBytes);
    } catch (const core::UnitError& e) {
      throw InputError("", "--max-plan-memory", "\"" + raw.max_plan_memory + "\": " + e.what());
    }
    if (!(bytes >= 1e6 && bytes <= 1e15)) {
      throw InputError(
          "", "--max-plan-memory",
          "expected a size from 1 MB to 1 PB (\"16 GiB\"), got \"" + raw.max_plan_memory + "\"");
    }
    args.plan_budget.max_bytes = bytes;
  }
}

void add_outputs(CLI::App* sub, CliArgs& args, RawValues& raw, bool native_out) {
  sub->add_option("--json", args.json_path, "write the summary of every run (JSON)")
      ->type_name("FILE");
  sub->add_option("--trace", args.trace_path, "write a Chrome Trace Event file (Perfetto)")
      ->type_name("FILE");
  sub->add_option("--trace-window", raw.window,
                  "keep the Chrome trace to FROM..UNTIL seconds of the run's time")
      ->type_name("FROM..UNTIL");
  if (native_out) {
    sub->add_option("--trace-out", args.trace_out_path,
                    "write the native trace of every run (for report)")
        ->type_name("FILE");
  }
  sub->add_flag("--force", args.force, "replace existing output files");
}

void add_connect_timeout(CLI::App* sub, RawValues& raw) {
  sub->add_option("--connect-timeout", raw.connect_timeout,
                  "seconds for every task to connect (default 30)")
      ->type_name("S");
}

// run's, validate's and calibrate's --isolate (`what` it shapes).
void add_isolate(CLI::App* sub, RawValues& raw, const std::string& what) {
  sub->add_option("--isolate", raw.isolate,
                  "netns: " + what + " (root; docs/validation-real.md); none: loopback")
      ->type_name("MODE");
}

// The real runs' knobs; `checkpoints`: with --checkpoint-dir.
void add_real_knobs(CLI::App* sub, CliArgs& args, RawValues& raw, bool checkpoints = true) {
  if (checkpoints) {
    sub->add_option("--checkpoint-dir", args.checkpoint_dir,
                    "where the chief's checkpoints and summaries and the final variables go")
        ->type_name("DIR");
  }
  sub->add_option("--threads", raw.threads, "SGEMM threads per op (default 1)")->type_name("N");
  add_connect_timeout(sub, raw);
  sub->add_flag("--insecure-frames", args.insecure_frames,
                "frames after the handshake without MACs: about 5x the transport's goodput on "
                "loopback, but an on-path attacker could alter tensors (every task or none)");
}

// The commands and their flags (docs/cli.md).
void define(CLI::App& app, CliArgs& args, RawValues& raw) {
  app.require_subcommand(1, 1);
  CLI::App* simulate =
      app.add_subcommand("simulate", "predict each strategy with SimGrid; print the report");
  simulate->add_option("SCENARIO", args.scenario, "the scenario file")->required()->type_name("");
  add_plan_knobs(simulate, raw);
  add_outputs(simulate, args, raw, true);
  simulate->add_flag("--strict", args.strict, "fail when a GPU cannot hold its share of a plan");
  simulate->add_option("--progress", args.progress, "auto (default), bar, json or none")
      ->type_name("MODE");
  simulate
      ->add_option("--network-engine", args.network_engine,
                   "how SimGrid updates link sharing: auto (default) or simgrid (its defaults)")
      ->type_name("ENGINE");
  simulate
      ->add_option("--seeds", raw.seeds,
                   "A..B, a list (1,4,9) or a count N (--seed and up): one run per seed, each "
                   "metric's mean and min..max")
      ->type_name("SEEDS");
  simulate->add_option("--jobs", raw.planning.jobs, "seeds simulated at once (default: the cores)")
      ->type_name("N");

  CLI::App* run = app.add_subcommand(
      "run", "run the plan on real processes of this machine (loopback TCP); print the report");
  run->add_option("SCENARIO", args.scenario, "the scenario file")->required()->type_name("");
  add_plan_knobs(run, raw, "between_graph");
  add_outputs(run, args, raw, true);
  run->add_option("--progress", args.progress, "auto (default), bar, json or none")
      ->type_name("MODE");
  add_real_knobs(run, args, raw);
  add_isolate(run, raw,
              "each machine in its own network namespace, NICs shaped with tc tbf to the "
              "scenario's bandwidth");

  CLI::App* node = app.add_subcommand(
      "node", "run one task of a real run (replisim run starts these; docs/real-runs.md)");
  node->add_option("--plan", args.plan_path,
                   "the plan (replisim plan SCENARIO --json --strategy X)")
      ->required()
      ->type_name("FILE");
  node->add_option("--role", args.role,
                   "a role of the plan: this node runs its task (default: from the launcher's "
                   "rank: OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID)")
      ->type_name("NAME");
  node->add_option("--cluster", args.cluster_path,
                   "the cluster spec (TF_CONFIG's cluster shape; default under srun: the step's "
                   "nodes from SLURM_STEP_NODELIST, under mpirun in an allocation its "
                   "SLURM_JOB_NODELIST, ports from --base-port)")
      ->type_name("FILE");
  node->add_option("--base-port", raw.base_port,
                   "under srun without --cluster: the first port on each node (default 43000)")
      ->type_name("PORT");
  node->add_option("--trace-out", args.node_trace,
                   "this task's part of the trace (default replisim-<task>.trace)")
      ->type_name("FILE");
  node->add_option("--run-trace-out", args.run_trace_out,
                   "the coordinator: the run's trace, every node's part gathered (default "
                   "replisim-run.trace); it also prints the report")
      ->type_name("FILE");
  node->add_flag("--force", args.force, "replace an existing trace file");
  add_real_knobs(node, args, raw);
  node->add_option("--listen-fd", raw.listen_fd, "a listening socket to use (from run)")
      ->type_name("N");
  node->add_option("--progress-fd", raw.progress_fd, "write progress lines here (from run)")
      ->type_name("N");
  node->add_flag("--launched", args.launched, "started by run")->group("");
  node->add_flag("--shaped-links", args.shaped_links, "started by run --isolate netns")->group("");
  node->add_option("--resume", args.resume_path, "a restart's facts (from run)")
      ->type_name("FILE")
      ->group("");

  CLI::App* validate = app.add_subcommand(
      "validate", "simulate and really run the same plan; print predicted against measured");
  validate->add_option("SCENARIO", args.scenario, "the scenario file")->required()->type_name("");
  add_plan_knobs(validate, raw, "between_graph");
  validate->add_option("--repeat", raw.repeat, "real runs of each plan (default 3)")
      ->type_name("N");
  validate
      ->add_option("--seeds", raw.seeds,
                   "simulations of each plan, seeds --seed and up: predicted means and ranges "
                   "(default 5)")
      ->type_name("N");
  validate
      ->add_option("--tolerance", raw.tolerance,
                   "the verdict's bound on the throughput and step time p50 errors (default "
                   "0.08: 8%)")
      ->type_name("F");
  validate
      ->add_option("--baseline", args.baseline_path,
                   "an earlier validate --json: show how each error moved")
      ->type_name("FILE");
  validate
      ->add_option("--measured", args.measured_path,
                   "compare with the real runs of this native trace (run --trace-out, made here "
                   "or on another machine; - reads it from standard input) instead of running the "
                   "plan; the scenario and flags must give the plan it ran")
      ->type_name("TRACE");
  validate->add_option("--json", args.json_path, "write the comparison (JSON)")->type_name("FILE");
  validate->add_option("--markdown", args.markdown_path, "write the comparison as Markdown tables")
      ->type_name("FILE");
  validate
      ->add_option("--trace", args.trace_path,
                   "write one Chrome trace: predicted and measured as two process groups")
      ->type_name("FILE");
  validate->add_flag("--force", args.force, "replace existing output files");
  validate->add_option("--progress", args.progress, "auto (default), bar, json or none")
      ->type_name("MODE");
  add_real_knobs(validate, args, raw, false);
  add_isolate(validate, raw, "the real runs on shaped network namespaces");

  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "measure this machine into a file scenarios include (docs/validation-real.md)");
  calibrate
      ->add_option("--out", args.calibration_out, "the file to write (default calibration.json)")
      ->type_name("FILE");
  add_isolate(calibrate, raw, "measure the link shaped to 1 Gbit/s in network namespaces");
  calibrate->add_flag("--force", args.force, "replace an existing file");
  calibrate->add_flag("--accept-unstable", args.accept_unstable,
                      "write the file even when the host was not stable enough (recorded in it)");
  calibrate
      ->add_option("--progress", args.progress,
                   "auto (default), bar, json or none: its runs' progress and its stages")
      ->type_name("MODE");
  add_connect_timeout(calibrate, raw);
  calibrate->add_option("--probe-seconds", raw.probe_seconds, "tests: a short calibration")
      ->type_name("S")
      ->group("");

  app.add_subcommand("cleanup",
                     "remove the network namespaces of shaped runs whose launcher is gone");

  CLI::App* plan = app.add_subcommand("plan", "print the compiled plan");
  plan->add_option("SCENARIO", args.scenario, "the scenario file")->required()->type_name("");
  add_plan_knobs(plan, raw);
  plan->add_flag("--json", args.json_stdout,
                 "print the plan data (an array for several strategies)");

  CLI::App* report =
      app.add_subcommand("report", "print the report of saved native traces, without running");
  report->add_option("TRACE", args.trace_files, "native trace files ('-': standard input)")
      ->required()
      ->type_name("");
  add_outputs(report, args, raw, false);
  report->add_option("--csv", args.csv_path, "write every event as CSV")->type_name("FILE");
  report->add_flag("--merge", args.merge,
                   "the TRACEs are the nodes' parts of one real run: merge them into it");

  define_planning_commands(app, args, raw.planning,
                           [&raw](CLI::App* sub) { add_plan_knobs(sub, raw, "between_graph"); });
}

}  // namespace

std::vector<std::string> plan_budget_flags(const core::PlanBudget& budget) {
  const core::PlanBudget defaults;
  std::vector<std::string> flags;
  char text[40];
  if (budget.max_ops != defaults.max_ops) {
    std::snprintf(text, sizeof text, "%.0f", budget.max_ops);
    flags.insert(flags.end(), {"--max-plan-ops", text});
  }
  if (budget.max_bytes != defaults.max_bytes) {
    std::snprintf(text, sizeof text, "%.0f B", budget.max_bytes);
    flags.insert(flags.end(), {"--max-plan-memory", text});
  }
  return flags;
}

namespace {

// A flag given twice is refused whatever CLI11 would make of it.
void refuse_repeats(const std::vector<std::string>& words) {
  std::vector<std::string> seen;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.size() < 3 || w.compare(0, 2, "--") != 0) continue;
    const std::string flag = w.substr(0, w.find('='));
    if (flag == "--vary") continue;  // one per knob of a sweep
    if (std::find(seen.begin(), seen.end(), flag) != seen.end()) {
      throw InputError("", flag, "given twice");
    }
    seen.push_back(flag);
  }
}

// The first word: a command, or --help / --version; an unknown one suggests the nearest.
void check_command(const std::vector<std::string>& words) {
  if (words.empty()) throw InputError("", "", "no command given; run replisim --help");
  const std::string& first = words.front();
  if (first == "simulate" || first == "sweep" || first == "whatif" || first == "recommend") {
    // A build without the simulator (REPLISIM_WITH_SIM=OFF) registers no "sim" backend.
    const auto& backends = core::registered_backends();
    const bool sim = std::any_of(backends.begin(), backends.end(),
                                 [](const core::BackendEntry& b) { return b.name == "sim"; });
    if (!sim) {
      throw InputError("", first,
                       "this replisim was built without the simulator (REPLISIM_WITH_SIM=OFF): "
                       "run, node, plan and report are here");
    }
  }
  if (first[0] == '-' || std::find(kCommands.begin(), kCommands.end(), first) != kCommands.end()) {
    return;
  }
  const std::string near = core::nearest_name(first, kCommands);
  throw InputError(
      "", first,
      "unknown command" + (near.empty() ? std::string("") : "; did you mean " + near + "?") +
          " (commands: simulate, plan, report, run, node, validate, calibrate, cleanup, sweep, "
          "whatif, recommend, merge, plot, --version, --help)");
}

std::vector<std::string> flag_names(const CLI::App& sub) {
  std::vector<std::string> names;
  for (const CLI::Option* o : sub.get_options()) {
    for (const std::string& name : o->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

// CLI11's error, as the project's one line naming the flag or argument.
[[noreturn]] void translate(const CLI::ParseError& e, const CLI::App& app) {
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  const CLI::App* sub = chosen.empty() ? nullptr : chosen.front();
  const std::string command = sub != nullptr ? sub->get_name() : "replisim";
  if (const auto* extras = dynamic_cast<const CLI::ExtrasError*>(&e)) {
    std::string word = extras->what();
    word = word.substr(word.find_last_of(' ') + 1);
    if (word.size() > 1 && word[0] == '-' && sub != nullptr) {
      const std::vector<std::string> flags = flag_names(*sub);
      const std::string near = core::nearest_name(word.substr(0, word.find('=')), flags);
      throw InputError("", word,
                       "unknown flag for " + command +
                           (near.empty() ? "; flags: " + core::join_names(flags)
                                         : "; did you mean " + near + "?"));
    }
    if (command == "cleanup" || command == "calibrate") {
      throw InputError("", word, "unexpected argument (" + command + " takes none)");
    }
    throw InputError("", word, "unexpected argument (one scenario file per run)");
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    if (command == "report") throw InputError("", "", "report needs at least one TRACE file");
    if (command == "merge") throw InputError("", "", "merge needs the shards' JSON files");
    if (command == "plot") throw InputError("", "", "plot needs a sweep's RESULTS file");
    if (command == "node") {
      throw InputError("", "", "node needs --plan FILE (and --role NAME, --cluster FILE)");
    }
    if (command == "recommend" && std::string(e.what()).find("--catalog") != std::string::npos) {
      throw InputError("", "--catalog",
                       "recommend needs a price catalog: --catalog FILE (scenarios/catalog/)");
    }
    if (sub != nullptr) throw InputError("", "", command + " needs a SCENARIO file");
  }
  std::string what = e.what();
  const size_t colon = what.find(": ");
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && colon != std::string::npos &&
      what.rfind("--", 0) == 0) {
    throw InputError("", what.substr(0, colon), "needs a value");
  }
  throw InputError("", command, what);
}

// The checks CLI11 leaves to us, after parsing.
void check_values(CliArgs& args, const RawValues& raw) {
  if (!raw.strategy.empty()) {
    args.strategy = raw.strategy;
    core::parse_strategy_list(args.strategy);  // throws naming --strategy
  }
  if (raw.strategy.empty() && (args.command == "run" || args.command == "validate" ||
                               args.command == "sweep" || args.command == "whatif")) {
    args.strategy = "between_graph";
  }
  if (raw.strategy.empty() && args.command == "recommend") args.strategy = "all";
  if (!raw.repeat.empty()) args.repeat = parse_int("--repeat", raw.repeat, 1, 100);
  if (!raw.seeds.empty() && args.command != "simulate") {
    args.seeds = parse_int("--seeds", raw.seeds, 1, 100);
  }
  if (!raw.tolerance.empty()) {
    char* end = nullptr;
    args.tolerance = std::strtod(raw.tolerance.c_str(), &end);
    if (*end != '\0' || raw.tolerance.empty() || !std::isfinite(args.tolerance) ||
        args.tolerance <= 0 || args.tolerance > 10) {
      throw InputError("", "--tolerance",
                       "expected a relative error above 0 and at most 10 (0.08: 8%), got \"" +
                           raw.tolerance + "\"");
    }
  }
  if (!raw.seed.empty()) args.seed = parse_seed(raw.seed);
  if (args.command == "simulate" && raw.seeds.empty() && !raw.planning.jobs.empty()) {
    throw InputError("", "--jobs", "runs several seeds at once: give --seeds too");
  }
  if (!raw.seeds.empty() && args.command == "simulate") {
    const bool count = raw.seeds.find_first_not_of("0123456789") == std::string::npos;
    if (!count && !raw.seed.empty()) {
      throw InputError("", "--seed",
                       "sets where a count of --seeds starts; with a range or a list of seeds it "
                       "would not be used: leave it out");
    }
    args.seed_list = parse_seed_list(raw.seeds, args.seed);
    const char* one_run_output = !args.trace_path.empty()       ? "--trace"
                                 : !args.trace_out_path.empty() ? "--trace-out"
                                                                : nullptr;
    if (one_run_output != nullptr) {
      throw InputError("", one_run_output,
                       "writes one run's trace: leave it out with --seeds, or simulate the seed "
                       "you want with --seed");
    }
  }
  if (!raw.threads.empty()) args.threads = parse_int("--threads", raw.threads, 1, 64);
  if (!raw.listen_fd.empty()) args.listen_fd = parse_int("--listen-fd", raw.listen_fd, 0, 1 << 20);
  if (!raw.base_port.empty()) args.base_port = parse_int("--base-port", raw.base_port, 1, 65535);
  if (!raw.progress_fd.empty()) {
    args.progress_fd = parse_int("--progress-fd", raw.progress_fd, 0, 1 << 20);
  }
  if (!raw.probe_seconds.empty()) {
    char* end = nullptr;
    args.probe_seconds = std::strtod(raw.probe_seconds.c_str(), &end);
    if (*end != '\0' || !(args.probe_seconds >= 0.05 && args.probe_seconds <= 60)) {
      throw InputError("", "--probe-seconds",
                       "expected seconds from 0.05 to 60, got \"" + raw.probe_seconds + "\"");
    }
  }
  if (!raw.connect_timeout.empty()) {
    char* end = nullptr;
    args.connect_timeout_s = std::strtod(raw.connect_timeout.c_str(), &end);
    if (*end != '\0' || !std::isfinite(args.connect_timeout_s) || args.connect_timeout_s <= 0 ||
        args.connect_timeout_s > 3600) {
      throw InputError(
          "", "--connect-timeout",
          "expected seconds above 0 and at most 3600, got \"" + raw.connect_timeout + "\"");
    }
  }
  if (!raw.isolate.empty()) {
    if (raw.isolate != "netns" && raw.isolate != "none") {
      throw InputError("", "--isolate",
                       "unknown mode \"" + raw.isolate + "\"; valid: netns, none (loopback)");
    }
    args.isolate = raw.isolate == "netns" ? "netns" : "";
  }
  if (!raw.steps.empty()) args.steps = parse_int("--steps", raw.steps, 1, core::limits::kMaxSteps);
  if (!raw.scale.empty()) args.scale_compute = parse_scale(raw.scale);
  parse_plan_budget(args, raw);
  if (!raw.window.empty()) parse_trace_window(args, raw.window);
  parse_progress_mode(args.progress);
  check_planning_values(args, raw.planning);
  if (args.trace_window && args.trace_path.empty()) {
    throw InputError("", "--trace-window", "limits the Chrome trace: give --trace FILE too");
  }
}

}  // namespace

std::string usage_text() {
  CliArgs args;
  RawValues raw;
  CLI::App app{"replisim: predicts, runs and explains in-graph and between-graph replication",
               "replisim"};
  define(app, args, raw);
  return app.help() +
         "\nreplisim --version prints the version of replisim and of its engines.\n"
         "exit codes: 0 success, 2 bad input, 1 a failed run, an output that cannot be written\n"
         "or an internal error, 3 validate outside its tolerance or calibrate refusing an "
         "unstable\n"
         "host, 130 cancelled (Ctrl-C).\n"
         "Docs: docs/cli.md\n";
}

CliArgs parse_cli_args(int argc, const char* const* argv) {
  CliArgs args;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) args.command_line += " ";
    args.command_line += shell_quote(argv[i]);
  }
  const std::vector<std::string> words(argv + (argc > 0 ? 1 : 0), argv + argc);
  check_command(words);
  const std::string& first = words.front();
  if (first == "--help" || first == "-h" || first == "help" || first == "--version" ||
      first == "version") {
    if (words.size() > 1) throw InputError("", words[1], "unexpected argument after " + first);
    args.command = first.find("version") != std::string::npos ? "version" : "help";
    if (args.command == "help") args.help_text = usage_text();
    return args;
  }
  refuse_repeats(words);
  RawValues raw;
  CLI::App app{"replisim: predicts, runs and explains in-graph and between-graph replication",
               "replisim"};
  define(app, args, raw);
  std::vector<std::string> reversed(words.rbegin(), words.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    args.command = "help";
    args.help_text = app.help();
    return args;
  } catch (const CLI::ParseError& e) {
    translate(e, app);
  }
  args.command = app.get_subcommands().front()->get_name();
  check_values(args, raw);
  if (args.command == "node") args.trace_out_path.clear();
  // Runs already made: the flags of making them do not apply.
  if (!args.measured_path.empty()) {
    for (const char* flag :
         {"--repeat", "--isolate", "--threads", "--connect-timeout", "--insecure-frames"}) {
      for (const std::string& w : words) {
        if (w == flag || w.rfind(std::string(flag) + "=", 0) == 0) {
          throw InputError("", flag,
                           "makes real runs; --measured compares with runs already made "
                           "(give it to run, which made them)");
        }
      }
    }
  }
  // A flag given with an empty value ("--threads ''") is refused, not taken as absent.
  for (const char* flag : {"--threads",        "--connect-timeout",
                           "--listen-fd",      "--progress-fd",
                           "--seed",           "--steps",
                           "--scale-compute",  "--strategy",
                           "--checkpoint-dir", "--role",
                           "--plan",           "--cluster",
                           "--base-port",      "--isolate",
                           "--repeat",         "--tolerance",
                           "--baseline",       "--seeds",
                           "--jobs",           "--shard",
                           "--cache",          "--vary",
                           "--max-plan-ops",   "--max-plan-memory",
                           "--network-engine", "--objective-target"}) {
    for (size_t i = 0; i < words.size(); ++i) {
      const bool empty = (words[i] == flag && i + 1 < words.size() && words[i + 1].empty()) ||
                         words[i] == std::string(flag) + "=";
      if (empty) throw InputError("", flag, "needs a value, got an empty one");
    }
  }
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--json", args.json_path},
           {"--trace", args.trace_path},
           {"--trace-out", args.command == "node" ? args.node_trace : args.trace_out_path},
           {"--run-trace-out", args.run_trace_out},
           {"--csv", args.csv_path},
           {"--baseline", args.baseline_path},
           {"--measured", args.measured_path},
           {"--markdown", args.markdown_path},
           {"--out", args.command == "plot" ? args.plot_out : args.calibration_out},
           {"--cache", args.cache_dir}}) {
    const std::vector<std::string>::const_iterator given = std::find_if(
        words.begin(), words.end(),
        [&flag](const std::string& w) { return w == flag || w.rfind(flag + "=", 0) == 0; });
    const bool takes_file = !(flag == "--json" && args.command == "plan");
    if (given != words.end() && value.empty() && takes_file) {
      throw InputError("", flag, "needs a file name, got an empty one");
    }
  }
  return args;
}

std::vector<std::string> selected_strategies(const CliArgs& args) {
  return core::parse_strategy_list(args.strategy);
}

}  // namespace replisim::cli
