// The training objective bench_scale --objective softmax adds (docs/benchmarks.md): softmax
// regression on a synthetic teacher-student set of 4,096 training samples (1,024 test) of 64
// features in 10 classes, batch 32, evaluated on the test set every 50 global steps, computed by
// the simulator as the run's ops complete (core/values/value_engine.h). The target (accuracy
// 0.9) only names what "trained" means; the benchmark measures the cost of the arithmetic.
#pragma once

#include <nlohmann/json.hpp>

namespace replisim::bench {

inline nlohmann::json softmax_objective() {
  return {{"data",
           {{"set", "synthetic"},
            {"samples", 4096},
            {"test_samples", 1024},
            {"features", 64},
            {"classes", 10},
            {"seed", 1}}},
          {"model", "softmax"},
          {"learning_rate", 0.1},
          {"staleness_aware", true},
          {"batch", 32},
          {"evaluate_every", 50},
          {"target", {{"accuracy", 0.9}}},
          {"timing", "scenario"},
          {"seed", 1}};
}

}  // namespace replisim::bench
