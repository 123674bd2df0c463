// `replisim plot`: a sweep's charts (scaling_chart.h) rendered offscreen into PNG and SVG files.
#pragma once

#include <string>
#include <vector>

namespace replisim::gui {

// Reads the sweep results in `results_file` (sweep --json or merge --json) and writes
// PREFIX-throughput, PREFIX-efficiency and PREFIX-breakdown (and PREFIX-time-to-target when the
// sweep's scenario has a training.objective), each as .png (1400 x 850 px) and .svg; returns the
// paths. Creates a QApplication on Qt's offscreen platform when the process
// has none (no display needed). All files are written, or none (core::OutputFiles): throws
// core::InputError for a bad results file or an existing output without `force`,
// core::OutputError when one cannot be written. `target_samples_per_s` > 0 draws that throughput
// as a dashed line on the throughput chart. A `replisim recommend --json` file (format
// "replisim-recommend") gives PREFIX-front.png and .svg instead: its cost-time chart
// (front_chart.h).
std::vector<std::string> write_sweep_plots(const std::string& results_file,
                                           const std::string& prefix, bool force,
                                           double target_samples_per_s = 0);

}  // namespace replisim::gui
