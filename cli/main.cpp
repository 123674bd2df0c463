// The replisim executable: registers the backends, parses flags, runs a command, maps errors to
// exit codes (0 success; 2 bad input, 1 a failed run, an output that cannot be written or an
// internal error, 130 cancelled: each with one line on stderr).
#include <csignal>
#include <iostream>
#include <new>

#include <sys/resource.h>
#include <unistd.h>

#include "cli/cli_args.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/point_pool.h"
#include "core/backend/backend.h"
#include "core/base/error.h"
#include "real/backend/real_backend.h"
#include "real/calibrate/microbench.h"
#include "real/isolate/netns.h"
#include "real/node/node.h"
#if REPLISIM_WITH_SIM
#include "sim/sim_backend.h"
#endif
#if REPLISIM_WITH_GUI
#include "gui/charts/plot_files.h"
#endif

namespace {
// Before every other constructor of the executable (its static libraries' included).
__attribute__((constructor(101))) void catch_interrupts_from_the_start() {
  replisim::cli::install_interrupt_handlers_early();
}
}  // namespace

int main(int argc, char** argv) {
  using namespace replisim;
  // From the start: a Ctrl-C before the first run still stops it cleanly.
  const cli::InterruptGuard interrupts;
  // Past a file-size limit (ulimit -f) a write fails with EFBIG and the output's usual one line,
  // instead of SIGXFSZ killing the process with a core dump.
  std::signal(SIGXFSZ, SIG_IGN);
  // Descriptors up to the hard limit: a parameter server with many peers, or one flooded by
  // connections that never authenticate (bounded by the mesh), keeps some for its checkpoints.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  cli::end_with_spawning_parent();  // a sweep's or seed spread's point dies with its parent
  try {
#if REPLISIM_WITH_SIM
    sim::register_sim_backend();
#endif
    real::register_real_backend();
    const cli::CliArgs args = cli::parse_cli_args(argc, argv);
    int code = 0;
    if (args.command == "help") {
      std::cout << args.help_text;
    } else if (args.command == "version") {
      std::cout << cli::version_text() << "\n";
    } else if (args.command == "plan") {
      code = cli::run_plan(args, std::cout);
    } else if (args.command == "report") {
      code = cli::run_report(args, std::cout);
    } else if (args.command == "run") {
      code = cli::run_real(args, std::cout);
    } else if (args.command == "calibrate") {
      cli::CalibrationProbes& probes = cli::calibration_probes();
      probes.sgemm_flop_per_s = real::calibrate::sgemm_flop_per_s;
      probes.sgd_apply_s_per_param = real::calibrate::sgd_apply_s_per_param;
      probes.copy_bytes_per_s = real::calibrate::copy_bytes_per_s;
      probes.gpu_sgemm_flop_per_s = real::calibrate::gpu_sgemm_flop_per_s;
      probes.check_isolation = real::isolate::check_can_isolate;
      probes.tcp_one_way_latency_s = real::calibrate::tcp_one_way_latency_s;
      code = cli::run_calibrate(args, std::cout);
    } else if (args.command == "validate") {
      cli::calibration_probes().check_isolation = real::isolate::check_can_isolate;
      code = cli::run_validate(args, std::cout);
    } else if (args.command == "sweep") {
      code = cli::run_sweep(args, std::cout);
    } else if (args.command == "whatif") {
      code = cli::run_whatif(args, std::cout);
    } else if (args.command == "recommend") {
      code = cli::run_recommend(args, std::cout);
    } else if (args.command == "merge") {
      code = cli::run_merge(args, std::cout);
    } else if (args.command == "plot") {
#if REPLISIM_WITH_GUI
      cli::plot_renderer() = [](const cli::PlotRequest& r) {
        return gui::write_sweep_plots(r.results_file, r.prefix, r.force, r.target_samples_per_s);
      };
#endif
      code = cli::run_plot(args, std::cout);
    } else if (args.command == "cleanup") {
      // The namespaces of shaped runs whose launcher died (run --isolate netns removes its own).
      if (::geteuid() != 0) {
        throw core::InputError("", "cleanup",
                               "needs root to remove network namespaces: run it as root or with "
                               "sudo");
      }
      const std::vector<std::string> removed = real::isolate::remove_leftovers();
      for (const std::string& name : removed)
        std::cout << "removed network namespace " << name << "\n";
      std::cout << "replisim cleanup: " << removed.size()
                << " leftover network namespace(s) of dead runs removed\n";
    } else if (args.command == "node") {
      real::NodeOptions node;
      node.plan_path = args.plan_path;
      node.role = args.role;
      node.cluster_path = args.cluster_path;
      node.listen_fd = args.listen_fd;
      node.trace_out = args.node_trace;
      node.force = args.force;
      node.checkpoint_dir = args.checkpoint_dir;
      node.threads = args.threads;
      node.connect_timeout_s = args.connect_timeout_s;
      node.progress_fd = args.progress_fd;
      node.launched = args.launched;
      node.resume_path = args.resume_path;
      node.shaped_links = args.shaped_links;
      node.insecure_frames = args.insecure_frames;
      node.base_port = args.base_port;
      node.run_trace_out = args.run_trace_out;
      node.report = [](const core::Trace& run, const std::string& file) {
        cli::print_gathered_report(run, file, std::cout);
      };
      node.cancelled = cli::interrupted;
      code = real::run_node(node);
    } else {
      code = cli::run_simulate(args, std::cout);
    }
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "replisim: error: cannot write to standard output\n";
      return 1;
    }
    return code;
  } catch (const core::InputError& e) {
    std::cerr << "replisim: error: " << e.what() << "\n";
    return 2;
  } catch (const core::OutputError& e) {
    std::cerr << "replisim: error: " << e.what() << "\n";
    return 1;
  } catch (const core::RunCancelled& e) {
    std::cerr << "replisim: cancelled: "
              << (e.detail().empty() ? std::string("no output was written") : e.detail()) << "\n";
    return 130;  // as a shell reports a command interrupted by SIGINT
  } catch (const core::BackendError& e) {
    std::cerr << "replisim: error: " << e.what() << "\n";
    return 1;
  } catch (const core::InternalError& e) {
    std::cerr << "replisim: " << e.what() << "\n";  // "internal error: ..."
    return 1;
  } catch (const std::bad_alloc&) {
    // Past the machine's memory (or a ulimit -v): not a bug of replisim's, and nothing written.
    std::cerr << "replisim: error: out of memory: a smaller scenario, or --max-plan-memory below "
                 "this machine's memory, refuses such a run before it starts\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "replisim: internal error: " << e.what() << "\n";
    return 1;
  }
}
