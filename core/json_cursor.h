// A read-only view of one value inside a JSON document that knows its file and JSON pointer, so
// every input error can say exactly where it is ("scenario.json: /training/ps/2: ...").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"

namespace replisim::core {

class JsonCursor {
 public:
  // `value` must outlive the cursor and every cursor derived from it (not owned).
  JsonCursor(const nlohmann::json& value, std::string file, std::string path = "");

  const nlohmann::json& value() const { return *value_; }
  const std::string& file() const { return file_; }
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
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

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

// Parses `text` (the content of `file`) as JSON. Throws InputError naming the file (and line,
// column or JSON path) on: empty input, malformed JSON, numbers out of range, nesting deeper
// than kMaxJsonDepth, and a key repeated in one object.
nlohmann::json parse_json_text(const std::string& text, const std::string& file);

// Reads and parses a JSON file. Throws InputError when it is missing, unreadable, not a regular
// file (a directory, FIFO or device), larger than kMaxJsonFileBytes, or bad as above.
nlohmann::json read_json_file(const std::string& file);

// Serialises `value`, replacing invalid UTF-8 (e.g. from file names) instead of throwing.
// `indent` < 0 gives the compact form.
std::string dump_json(const nlohmann::json& value, int indent = -1);

}  // namespace replisim::core
