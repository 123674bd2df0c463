#include "core/trace/trace_csv.h"

#include <charconv>
#include <cmath>
#include <ostream>
#include <stdexcept>

#include "core/base/error.h"
#include "core/base/json_cursor.h"

namespace replisim::core {
namespace {

// Whole numbers below 2^53 (byte and FLOP counts) in full, others in the shortest decimal that
// reads back to the same double.
std::string number(double value) {
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    return std::to_string(int64_t(value));
  }
  char buffer[32];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, r.ptr);
}

// An integer where -1 means absent.
std::string optional_integer(int64_t value) {
  return value == -1 ? std::string() : std::to_string(value);
}

void write_row(std::string& line, const std::vector<std::string>& fields) {
  line.clear();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    line += csv_field(fields[i]);
  }
  line += '\n';
}

}  // namespace

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> kColumns = {"run",
                                                    "strategy",
                                                    "kind",
                                                    "actor",
                                                    "device",
                                                    "lane",
                                                    "label",
                                                    "client",
                                                    "step",
                                                    "start_s",
                                                    "end_s",
                                                    "bytes",
                                                    "flop",
                                                    "peer_actor",
                                                    "peer",
                                                    "message_id",
                                                    "global_step_read",
                                                    "global_step_after",
                                                    "samples"};
  return kColumns;
}

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void write_events_csv(std::ostream& out, const std::vector<const Trace*>& runs,
                      const nlohmann::json& provenance) {
  // dump_json escapes control characters, so the comment is one line whatever it holds.
  out << "# replisim trace events; provenance: " << dump_json(provenance) << "\n";
  std::string line;
  write_row(line, csv_columns());
  out << line;
  std::vector<std::string> fields(csv_columns().size());
  for (size_t run = 0; run < runs.size(); ++run) {
    const Trace& t = *runs[run];
    const std::string& strategy = t.meta.strategy;
    for (const TraceEvent& e : t.events) {
      fields = {std::to_string(run),
                strategy,
                event_kind_name(e.kind),
                t.str(e.actor),
                t.str(e.device),
                lane_name(e.kind),
                t.str(e.label),
                t.str(e.client),
                optional_integer(e.step),
                number(e.start_s),
                number(e.end_s),
                number(e.bytes),
                number(e.flop),
                t.str(e.peer_actor),
                t.str(e.peer),
                optional_integer(e.message_id),
                optional_integer(e.global_step_read),
                optional_integer(e.global_step_after),
                std::to_string(e.samples)};
      write_row(line, fields);
      out << line;
    }
  }
  if (!out) throw OutputError("", "cannot write the events CSV");
}

}  // namespace replisim::core
