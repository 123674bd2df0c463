// The events CSV: RFC 4180 quoting, the provenance comment, the header, one row per event.
#include "core/trace/trace_csv.h"

#include <sstream>

#include <gtest/gtest.h>

namespace replisim::core {
namespace {

// Splits RFC 4180 text into records of fields (quoted fields may hold commas, quotes, newlines).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records(1, std::vector<std::string>(1));
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = records.back().back();
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      records.back().emplace_back();
    } else if (c == '\n') {
      records.emplace_back(1);
    } else {
      field += c;
    }
  }
  EXPECT_FALSE(quoted) << "unterminated quote";
  if (records.back() == std::vector<std::string>(1)) records.pop_back();
  return records;
}

TEST(TraceCsv, QuotesPerRfc4180) {
  EXPECT_EQ(csv_field("pc1/gpu0"), "pc1/gpu0");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
}

TEST(TraceCsv, ProvenanceHeaderAndOneRowPerEvent) {
  Trace a;
  a.meta.strategy = "in_graph";
  TraceEvent transfer;
  transfer.kind = EventKind::kTransfer;
  transfer.actor = a.intern("worker,0");
  transfer.device = a.intern("pc1/gpu0");
  transfer.label = a.intern("send \"grad\"\nline two");
  transfer.peer_actor = a.intern("ps0");
  transfer.peer = a.intern("pc2/cpu");
  transfer.step = 3;
  transfer.start_s = 0.1;
  transfer.end_s = 1.0 / 3.0;
  transfer.bytes = 4e6;
  transfer.message_id = 7;
  a.events = {transfer, TraceEvent()};
  Trace b;
  b.meta.strategy = "between_graph";
  TraceEvent update;
  update.kind = EventKind::kUpdate;
  update.actor = b.intern("worker1");
  update.start_s = update.end_s = 2.5;
  update.global_step_read = 0;
  update.global_step_after = 1;
  update.samples = 32;
  b.events = {update};
  const nlohmann::json provenance = {
      {"seed", 5}, {"scenario_hash", "abc"}, {"command_line", "replisim simulate 'a\nb.json'"}};
  std::ostringstream out;
  write_events_csv(out, {&a, &b}, provenance);
  const std::string text = out.str();

  const std::string prefix = "# replisim trace events; provenance: ";
  ASSERT_EQ(text.rfind(prefix, 0), 0u) << text;
  const size_t end_of_comment = text.find('\n');
  EXPECT_EQ(nlohmann::json::parse(text.substr(prefix.size(), end_of_comment - prefix.size())),
            provenance);
  const auto records = parse_csv(text.substr(end_of_comment + 1));
  ASSERT_EQ(records.size(), 1u + 3u);  // header + one row per event
  EXPECT_EQ(records[0], csv_columns());
  for (const auto& r : records) EXPECT_EQ(r.size(), csv_columns().size());
  EXPECT_EQ(records[1], std::vector<std::string>({"0", "in_graph", "transfer", "worker,0",
                                                  "pc1/gpu0", "send", "send \"grad\"\nline two", "",
                                                  "3", "0.1", "0.3333333333333333", "4000000", "0",
                                                  "ps0", "pc2/cpu", "7", "", "", "0"}));
  // A default event: every string and -1 integer absent.
  EXPECT_EQ(records[2],
            std::vector<std::string>({"0", "in_graph", "compute", "", "", "compute", "", "", "",
                                      "0", "0", "0", "0", "", "", "", "", "", "0"}));
  EXPECT_EQ(records[3],
            std::vector<std::string>({"1", "between_graph", "update", "worker1", "", "update", "",
                                      "", "", "2.5", "2.5", "0", "0", "", "", "", "0", "1", "32"}));
}

}  // namespace
}  // namespace replisim::core
