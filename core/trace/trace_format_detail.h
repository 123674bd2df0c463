// Internal pieces of the native trace format shared by its version 3 writer and reader
// (trace_format.cpp) and the version 2 reader (trace_format_v2.cpp). Not a public API.
#pragma once

#include <cstdint>
#include <cstring>
#include <istream>
#include <string>

#include "core/base/error.h"
#include "core/trace/trace.h"
#include "core/trace/trace_sink.h"

namespace replisim::core::trace_format_detail {

inline constexpr char kMagic[8] = {'R', 'S', 'T', 'R', 'A', 'C', 'E', '\0'};
// Writers flush and readers grow long strings in pieces of this size.
inline constexpr size_t kChunkBytes = size_t(64) << 10;

// Little-endian encoding, whatever the host's byte order.
inline void put_u64(std::string& out, uint64_t value, int bytes = 8) {
  for (int i = 0; i < bytes; ++i) out.push_back(char(uint8_t(value >> (8 * i))));
}
inline void put_u32(std::string& out, uint32_t value) {
  put_u64(out, value, 4);
}
inline void put_f64(std::string& out, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  put_u64(out, bits);
}
inline uint64_t load_u64(const char* p, int bytes = 8) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | uint8_t(p[i]);
  return value;
}
inline uint32_t load_u32(const char* p) {
  return uint32_t(load_u64(p, 4));
}
inline double load_f64(const char* p) {
  const uint64_t bits = load_u64(p);
  double value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Why `e` is not a valid event of a run with `strings` strings defined ("" if it is valid).
std::string event_problem(const TraceEvent& e, uint32_t strings);
std::string counter_problem(const CounterSample& c, uint32_t strings);

// The event and counter fields both versions store alike, after the per-version head: six string
// indices, step, four quantities, three integers, samples (92 bytes); the counter (20 bytes).
inline constexpr size_t kEventBodyBytes = 92;
inline constexpr size_t kCounterBytes = 20;
void encode_event_body(std::string& out, const TraceEvent& e);
void decode_event_body(const char* p, TraceEvent& e);
CounterSample decode_counter(const char* p);

// Reads bytes from the stream, tracking the offset, the running checksum of the current run,
// and (when the stream can seek) how many bytes are left, so that no count or length is trusted
// beyond what the input holds. Errors name the source, the run and the record.
// Where a run's FNV-1a checksum starts in a file of `version`: the FNV basis before version 5,
// the basis hashed with the version's 4 bytes from 5 on.
uint64_t run_hash_basis(uint32_t version);

class Decoder {
 public:
  Decoder(std::istream& in, const std::string& source);

  // Where messages say the fault is: "run 1, event 17".
  void at(int64_t run, const char* section = nullptr, uint64_t index = kNoIndex) {
    run_ = run;
    section_ = section;
    index_ = index;
  }
  // The run checksum starts again (run_hash_basis(version)).
  void reset_hash(uint32_t version = 0);
  uint64_t hash() const { return hash_; }
  uint64_t offset() const { return offset_; }

  void read(char* out, size_t size, bool hashed = true);
  // Up to `size` bytes, unhashed; returns how many arrived (fewer only at the input's end).
  size_t read_up_to(char* out, size_t size);
  uint8_t u8();
  uint32_t u32();
  uint64_t u64(bool hashed = true);
  // `size` bytes, grown piece by piece so a corrupt length cannot allocate more than arrived.
  std::string text(uint32_t size);
  // A JSON object of at most kMaxTraceMetaBytes, given its length first.
  nlohmann::json json_object();
  // Rejects `count` records of `record_bytes` each when above `limit` or beyond the input's end.
  void check_count(uint64_t count, uint64_t limit, uint64_t record_bytes, const char* what);
  bool at_end();

  [[noreturn]] void fail(const std::string& message) const;
  const std::string& source() const { return source_; }

 private:
  static constexpr uint64_t kNoIndex = ~uint64_t(0);
  void measure();

  std::istream& in_;
  const std::string& source_;
  uint64_t offset_ = 0;
  bool size_known_ = false;
  uint64_t size_ = 0;
  uint64_t hash_ = 0;
  int64_t run_ = -1;
  const char* section_ = nullptr;
  uint64_t index_ = kNoIndex;
};

// Calls `parse` (a JSON reader of the metadata or outcome); its InputError comes back naming
// run `run` before the JSON path: "t.rstrace: run 1, /meta/steps: ...".
template <typename Parse>
auto in_run(uint32_t run, Parse&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const InputError& e) {
    throw InputError(e.file(), "",
                     "run " + std::to_string(run) + ", " +
                         (e.json_path().empty() ? std::string() : e.json_path() + ": ") +
                         e.message());
  }
}

// Reads the runs of a version 2 file whose 16-byte header said `runs` (trace_format_v2.cpp).
void read_runs_v2(Decoder& d, uint32_t runs, TraceSink& sink);

}  // namespace replisim::core::trace_format_detail
