// Parses the scenario's "model" object: a preset name or an explicit layer list.
#pragma once

#include "core/json_cursor.h"
#include "core/model.h"

namespace replisim::core {

// {"preset": NAME} or {"layers": [...], "input_bytes_per_sample": "..."}.
// Throws InputError at the offending JSON path (unknown preset lists the valid ones).
Model parse_model(const JsonCursor& c);

}  // namespace replisim::core
