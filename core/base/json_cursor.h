// A read-only view of one value inside a JSON document that knows its file and JSON pointer, so
// every input error can say exactly where it is ("scenario.json: /training/ps/2: ...").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/units.h"

namespace replisim::core {

// Which file each part of a merged document came from (scenario includes): JSON pointer -> file.
// A path not listed inherits the file of its nearest listed ancestor.
class SourceMap {
 public:
  explicit SourceMap(std::string root_file) : root_file_(std::move(root_file)) {}
  const std::string& file_of(const std::string& path) const;
  // Records `file` for `path` and forgets what was recorded below it.
  void assign(const std::string& path, const std::string& file);
  // Makes `path` and everything below it come from where `other` says they come from.
  void copy_from(const SourceMap& other, const std::string& path);

 private:
  std::string root_file_;
  std::map<std::string, std::string> files_;
};

class JsonCursor {
 public:
  // `value` must outlive the cursor and every cursor derived from it (not owned).
  JsonCursor(const nlohmann::json& value, std::string file, std::string path = "");
  // A cursor whose errors name the file each part came from (`sources` must outlive it).
  JsonCursor(const nlohmann::json& value, const SourceMap* sources, std::string path = "");

  const nlohmann::json& value() const { return *value_; }
  // The file this value came from.
  const std::string& file() const { return sources_ ? sources_->file_of(path_) : file_; }
  // JSON pointer of this value ("" is the document root, shown as "/").
  const std::string& path() const { return path_; }
  std::string path_or_root() const { return path_.empty() ? "/" : path_; }

  bool has(const std::string& key) const;
  // Member `key` of an object; throws InputError "required field missing" when absent.
  JsonCursor at(const std::string& key) const;
  // Element `index` of an array (caller checks size()).
  JsonCursor at(size_t index) const;
  size_t size() const;

  void expect_object() const;
  void expect_array() const;
  // Rejects a member not in `known`, suggesting the nearest known name when one is close.
  void check_keys(const std::vector<std::string>& known) const;

  std::string as_string() const;
  bool as_bool() const;
  double as_number() const;
  // An integer in [min_value, max_value]; rejects fractions and out-of-range values.
  int64_t as_int(int64_t min_value, int64_t max_value) const;
  // A quantity string with a unit; a bare number is an error that shows an example.
  double as_quantity(Dimension dimension) const;
  // A quantity in [min_value, max_value] (SI base units); the message shows both bounds.
  double as_quantity_in(Dimension dimension, double min_value, double max_value) const;
  // A number in [min_value, max_value].
  double as_number_in(double min_value, double max_value) const;

  // Throws InputError(file, path, message).
  [[noreturn]] void fail(const std::string& message) const;

 private:
  JsonCursor child(const nlohmann::json& value, std::string path) const;

  const nlohmann::json* value_;
  std::string file_;
  const SourceMap* sources_ = nullptr;
  std::string path_;
};

// JSON pointer escaping of one token (RFC 6901): "~" -> "~0", "/" -> "~1".
std::string escape_pointer_token(const std::string& token);

// Name of a JSON value's type for messages ("number 10", "string \"x\"", "object").
std::string describe_json(const nlohmann::json& value);

// The candidate closest to `name` by edit distance, or "" when none is close enough to suggest.
std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates);

// Comma-separated list of names, for "valid ones are: a, b, c".
std::string join_names(const std::vector<std::string>& names);

// Deepest nesting accepted in input documents (scenarios nest about 6 levels).
inline constexpr int kMaxJsonDepth = 64;
// Largest input file read (scenarios are a few kB).
inline constexpr size_t kMaxJsonFileBytes = size_t(64) << 20;
// Most values (objects, arrays, strings, numbers, ...) a document may hold before it is built: a
// document costs about 100 bytes of memory per value (nlohmann's nodes), so a small file of
// empty objects could take gigabytes (issue 37: 60 MiB of "[{},...]" peaked at 3.76 GiB before
// its refusal). Plans of a thousand workers by layer hold a few million.
inline constexpr size_t kMaxJsonValues = size_t(8) << 20;
// The same for scenarios, which people write (10,000 machines listed one by one: about 100,000).
inline constexpr size_t kMaxScenarioJsonValues = size_t(1) << 20;

// Parses `text` (the content of `file`) as JSON. Throws InputError naming the file (and line,
// column or JSON path) on: empty input, malformed JSON, numbers out of range, nesting deeper
// than kMaxJsonDepth, a key repeated in one object, and more than `max_values` values (found by a
// first pass that builds nothing).
nlohmann::json parse_json_text(const std::string& text, const std::string& file,
                               size_t max_values = kMaxJsonValues);

// Reads and parses a JSON file. Throws InputError when it is missing, unreadable, not a regular
// file (a directory, FIFO or device), larger than kMaxJsonFileBytes, or bad as above.
nlohmann::json read_json_file(const std::string& file, size_t max_values = kMaxJsonValues);

// Serialises `value`, replacing invalid UTF-8 (e.g. from file names) instead of throwing.
// `indent` < 0 gives the compact form.
std::string dump_json(const nlohmann::json& value, int indent = -1);

}  // namespace replisim::core
