// The training objective a plan carries (Plan::objective; the scenario's training.objective,
// docs/scenario-format.md): the data, the proxy model's shape and the SGD settings a backend
// needs to compute the objective's arithmetic, as plain data (the plan floor knows no model).
// core/values' ValueEngine builds the data set and model from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/json_cursor.h"

namespace replisim::core {

struct PlanObjective {
  bool enabled = false;  // false: the plan computes no objective (rates only); no JSON key
  // The data: "synthetic" (the seeded teacher-student set: core/model/data_set.h) or
  // "fashion_mnist" (its IDX files in `dir`, the first `subset` samples of each set; 0: all).
  std::string set = "synthetic";
  int train_samples = 0;   // synthetic
  int test_samples = 0;    // synthetic
  int features = 0;        // synthetic
  int classes = 0;         // synthetic
  uint64_t data_seed = 0;  // synthetic
  std::string dir;         // fashion_mnist
  int subset = 0;          // fashion_mnist
  // The model: softmax regression (no hidden layer) or a ReLU MLP of these hidden widths.
  std::vector<int> hidden_widths;
  double learning_rate = 0;
  // "constant", or "step_decay": lr x decay_rate ^ floor(global step / decay_steps).
  std::string schedule = "constant";
  int64_t decay_steps = 0;
  double decay_rate = 1;
  bool staleness_aware = false;     // lr / max(staleness, 1) (Zhang et al. 2016)
  int batch = 0;                    // samples per worker step of the proxy
  int evaluate_every_steps = 0;     // global steps between evaluations on the test set
  std::string target = "accuracy";  // "accuracy" (>= target_value) or "loss" (<= target_value)
  double target_value = 0;
  std::string timing = "objective";  // "objective" or "scenario": whose costs drive the clock
  uint64_t seed = 0;                 // initialisation, shards and batch orders
};

// The objective's JSON (the plan's "objective" key; written only when enabled).
nlohmann::json plan_objective_to_json(const PlanObjective& objective);
// Reads it back (enabled); throws InputError naming the file and JSON path of a bad field.
PlanObjective plan_objective_from_json(const JsonCursor& c);

}  // namespace replisim::core
