// libFuzzer target: the bytes are a native trace file (either format: version 2 or today's).
// Reading it ends in its runs or an InputError naming the trace, never a crash, a hang or an
// allocation beyond what the file's own size justifies; the metrics of what it read end in figures,
// an InputError or a MeasurementError.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/metrics/metrics.h"
#include "core/trace/trace_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replisim::core;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const std::vector<Trace> traces = read_traces_binary(in, "fuzz.trace");
    for (const Trace& trace : traces) {
      try {
        compute_metrics(trace, "fuzz.trace");
      } catch (const InputError&) {  // MeasurementError included
      }
    }
  } catch (const InputError&) {
  }
  return 0;
}
