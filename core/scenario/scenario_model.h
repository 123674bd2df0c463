// Parses the scenario's "model" object: a preset name or an explicit layer list.
#pragma once

#include "core/base/json_cursor.h"
#include "core/model/model.h"

namespace replisim::core {

// {"preset": NAME} (plus "widths": [...] for presets that take them, i.e. mlp) or
// {"layers": [...], "input_bytes_per_sample": "..."}; either may add "dtype": "fp32" | "fp16".
// Throws InputError at the offending JSON path (an unknown preset or dtype lists the valid ones;
// widths missing for mlp, given to another model, with fewer than 2 entries or one not > 0).
Model parse_model(const JsonCursor& c);

}  // namespace replisim::core
