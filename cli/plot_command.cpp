// plot: a sweep's charts as PNG and SVG files. The drawing is Qt Charts' (gui/charts), set by
// main() in a build with Qt; this library only checks the request and reports the files.
#include <ostream>

#include "cli/commands.h"
#include "core/base/error.h"

namespace replisim::cli {

PlotRenderer& plot_renderer() {
  static PlotRenderer renderer;
  return renderer;
}

int run_plot(const CliArgs& args, std::ostream& out) {
  if (!plot_renderer()) {
    throw core::InputError("", "plot",
                           "this replisim was built without Qt 6 (REPLISIM_WITH_GUI=OFF), which "
                           "draws the charts: install qt6-base-dev qt6-svg-dev qt6-charts-dev "
                           "(scripts/setup) and build again, or chart the sweep's --csv elsewhere");
  }
  PlotRequest request;
  request.results_file = args.result_files.front();
  request.prefix = args.plot_out;
  if (request.prefix.empty()) {
    request.prefix = request.results_file;
    const std::string suffix = ".json";
    if (request.prefix.size() > suffix.size() &&
        request.prefix.compare(request.prefix.size() - suffix.size(), suffix.size(), suffix) == 0) {
      request.prefix.resize(request.prefix.size() - suffix.size());
    }
  }
  request.force = args.force;
  request.target_samples_per_s = args.plot_target_samples_per_s;
  for (const std::string& file : plot_renderer()(request)) out << "wrote " << file << "\n";
  return 0;
}

}  // namespace replisim::cli
