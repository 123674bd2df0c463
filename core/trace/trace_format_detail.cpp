// What both versions of the native trace format share: event and counter validation, the common
// event fields' encoding, and the Decoder.
#include "core/trace/trace_format_detail.h"

#include <algorithm>
#include <cmath>

#include "core/base/error.h"
#include "core/base/hash.h"
#include "core/base/json_cursor.h"
#include "core/trace/trace_format.h"

namespace replisim::core {
namespace trace_format_detail {
namespace {

std::string number_text(double value) {
  return dump_json(nlohmann::json(value));
}

bool valid_op_kind(const std::optional<OpKind>& kind) {
  return !kind || size_t(*kind) < all_op_kinds().size();
}

}  // namespace

std::string event_problem(const TraceEvent& e, uint32_t strings) {
  if (uint8_t(e.kind) > uint8_t(EventKind::kCollective)) {
    return "unknown event kind " + std::to_string(int(e.kind));
  }
  if (!valid_op_kind(e.op) || !valid_op_kind(e.producer)) return "unknown op kind";
  if ((e.flags & ~kKnownEventFlags) != 0) return "unknown flags " + std::to_string(e.flags);
  for (uint32_t index : {e.actor, e.device, e.label, e.client, e.peer_actor, e.peer, e.bound}) {
    if (index != kNoString && index >= strings) {
      return "string index " + std::to_string(index) + " not defined (the run has " +
             std::to_string(strings) + " strings so far)";
    }
  }
  if (!std::isfinite(e.start_s) || !std::isfinite(e.end_s)) return "start_s or end_s not finite";
  if (e.end_s < e.start_s) {
    return "ends (end_s " + number_text(e.end_s) + ") before it starts (start_s " +
           number_text(e.start_s) + ")";
  }
  if (!std::isfinite(e.bytes) || e.bytes < 0) return "bytes not a finite number >= 0";
  if (!std::isfinite(e.flop) || e.flop < 0) return "flop not a finite number >= 0";
  if (e.samples < 0) return "samples below 0";
  if (e.op_index < -1) return "op_index below -1 (-1 means absent)";
  for (int64_t value : {e.step, e.message_id, e.global_step_read, e.global_step_after}) {
    if (value < -1) return "step, message_id or a global_step below -1 (-1 means absent)";
  }
  return "";
}

std::string counter_problem(const CounterSample& c, uint32_t strings) {
  if (c.name >= strings) {
    return "name index " + std::to_string(c.name) + " not defined (the run has " +
           std::to_string(strings) + " strings so far)";
  }
  if (!std::isfinite(c.time_s) || !std::isfinite(c.value)) return "time_s or value not finite";
  return "";
}

void encode_event_body(std::string& out, const TraceEvent& e) {
  for (uint32_t index : {e.actor, e.device, e.label, e.client, e.peer_actor, e.peer}) {
    put_u32(out, index);
  }
  put_u64(out, uint64_t(e.step));
  for (double value : {e.start_s, e.end_s, e.bytes, e.flop}) put_f64(out, value);
  for (int64_t value : {e.message_id, e.global_step_read, e.global_step_after}) {
    put_u64(out, uint64_t(value));
  }
  put_u32(out, uint32_t(e.samples));
}

void decode_event_body(const char* p, TraceEvent& e) {
  e.actor = load_u32(p);
  e.device = load_u32(p + 4);
  e.label = load_u32(p + 8);
  e.client = load_u32(p + 12);
  e.peer_actor = load_u32(p + 16);
  e.peer = load_u32(p + 20);
  e.step = int64_t(load_u64(p + 24));
  e.start_s = load_f64(p + 32);
  e.end_s = load_f64(p + 40);
  e.bytes = load_f64(p + 48);
  e.flop = load_f64(p + 56);
  e.message_id = int64_t(load_u64(p + 64));
  e.global_step_read = int64_t(load_u64(p + 72));
  e.global_step_after = int64_t(load_u64(p + 80));
  e.samples = int32_t(load_u32(p + 88));
}

CounterSample decode_counter(const char* p) {
  return {load_u32(p), load_f64(p + 4), load_f64(p + 12)};
}

Decoder::Decoder(std::istream& in, const std::string& source) : in_(in), source_(source) {
  reset_hash();
  measure();
}

void Decoder::reset_hash(uint32_t version) {
  hash_ = run_hash_basis(version);
}

uint64_t run_hash_basis(uint32_t version) {
  if (version < 5) return kFnv1aBasis;
  // From version 5 a run's checksum covers the file's version too (its 4 bytes, little-endian
  // as written): a version 5 file whose version were changed to 4 (the same layout) is refused.
  const char bytes[4] = {char(version & 0xFF), char((version >> 8) & 0xFF),
                         char((version >> 16) & 0xFF), char((version >> 24) & 0xFF)};
  return fnv1a(kFnv1aBasis, bytes, sizeof bytes);
}

void Decoder::read(char* out, size_t size, bool hashed) {
  in_.read(out, std::streamsize(size));
  const size_t got = size_t(in_.gcount());
  offset_ += got;
  if (got != size) {
    fail(offset_ == 0 ? std::string("empty: no trace")
                      : "truncated: the data ends at byte " + std::to_string(offset_));
  }
  if (hashed) hash_ = fnv1a(hash_, out, size);
}

size_t Decoder::read_up_to(char* out, size_t size) {
  in_.read(out, std::streamsize(size));
  const size_t got = size_t(in_.gcount());
  offset_ += got;
  return got;
}

uint8_t Decoder::u8() {
  char byte = 0;
  read(&byte, 1);
  return uint8_t(byte);
}

uint32_t Decoder::u32() {
  char bytes[4];
  read(bytes, sizeof bytes);
  return load_u32(bytes);
}

uint64_t Decoder::u64(bool hashed) {
  char bytes[8];
  read(bytes, sizeof bytes, hashed);
  return load_u64(bytes);
}

std::string Decoder::text(uint32_t size) {
  std::string out;
  while (out.size() < size) {
    const size_t piece = std::min(kChunkBytes, size - out.size());
    const size_t done = out.size();
    out.resize(done + piece);
    read(&out[done], piece);
  }
  return out;
}

nlohmann::json Decoder::json_object() {
  const uint32_t size = u32();
  check_count(size, kMaxTraceMetaBytes, 1, "length");
  const std::string bytes = text(size);
  nlohmann::json value;
  try {
    value = parse_json_text(bytes, source_);
  } catch (const InputError& e) {
    fail(e.message());
  }
  if (!value.is_object()) fail("not a JSON object");
  return value;
}

void Decoder::check_count(uint64_t count, uint64_t limit, uint64_t record_bytes, const char* what) {
  if (count > limit) {
    fail(std::string(what) + " " + std::to_string(count) + " above the limit of " +
         std::to_string(limit));
  }
  if (size_known_ && count * record_bytes > size_ - std::min(size_, offset_)) {
    fail("truncated: " + std::string(what) + " " + std::to_string(count) + " needs " +
         std::to_string(count * record_bytes) + " bytes but only " +
         std::to_string(size_ - std::min(size_, offset_)) + " are left");
  }
}

bool Decoder::at_end() {
  return in_.peek() == std::char_traits<char>::eof();
}

void Decoder::fail(const std::string& message) const {
  std::string where;
  if (run_ >= 0) {
    where = "run " + std::to_string(run_);
    if (section_ != nullptr) where += std::string(", ") + section_;
    if (index_ != kNoIndex) where += " " + std::to_string(index_);
    where += ": ";
  }
  throw InputError(source_, "", where + message);
}

void Decoder::measure() {
  const std::streampos here = in_.tellg();
  if (here == std::streampos(-1)) {
    in_.clear();
    return;
  }
  in_.seekg(0, std::ios::end);
  const std::streampos end = in_.tellg();
  in_.clear();
  in_.seekg(here);
  if (end != std::streampos(-1) && end >= here) {
    size_known_ = true;
    size_ = uint64_t(end - here);
  }
}

}  // namespace trace_format_detail

}  // namespace replisim::core
