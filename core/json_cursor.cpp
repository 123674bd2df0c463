#include "core/json_cursor.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace replisim::core {
namespace {

// JSON pointer escaping (RFC 6901): "~" -> "~0", "/" -> "~1".
std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

JsonCursor::JsonCursor(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

bool JsonCursor::has(const std::string& key) const {
  return value_->is_object() && value_->contains(key);
}

JsonCursor JsonCursor::at(const std::string& key) const {
  expect_object();
  auto it = value_->find(key);
  const std::string child_path = path_ + "/" + escape_pointer_token(key);
  if (it == value_->end()) throw InputError(file_, child_path, "required field missing");
  return JsonCursor(*it, file_, child_path);
}

JsonCursor JsonCursor::at(size_t index) const {
  expect_array();
  if (index >= value_->size()) fail("index " + std::to_string(index) + " out of range");
  return JsonCursor((*value_)[index], file_, path_ + "/" + std::to_string(index));
}

size_t JsonCursor::size() const {
  expect_array();
  return value_->size();
}

void JsonCursor::expect_object() const {
  if (!value_->is_object()) fail("expected an object, got " + describe_json(*value_));
}

void JsonCursor::expect_array() const {
  if (!value_->is_array()) fail("expected an array, got " + describe_json(*value_));
}

void JsonCursor::check_keys(const std::vector<std::string>& known) const {
  expect_object();
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
    std::string message = "unknown field \"" + it.key() + "\"";
    const std::string suggestion = nearest_name(it.key(), known);
    if (!suggestion.empty()) {
      message += "; did you mean \"" + suggestion + "\"?";
    } else {
      message += "; known fields: " + join_names(known);
    }
    throw InputError(file_, path_ + "/" + escape_pointer_token(it.key()), message);
  }
}

std::string JsonCursor::as_string() const {
  if (!value_->is_string()) fail("expected a string, got " + describe_json(*value_));
  return value_->get<std::string>();
}

bool JsonCursor::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + describe_json(*value_));
  return value_->get<bool>();
}

double JsonCursor::as_number() const {
  if (!value_->is_number()) fail("expected a number, got " + describe_json(*value_));
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("expected a finite number");
  return v;
}

int64_t JsonCursor::as_int(int64_t min_value, int64_t max_value) const {
  if (!value_->is_number()) fail("expected an integer, got " + describe_json(*value_));
  const double v = value_->get<double>();
  if (!std::isfinite(v) || std::floor(v) != v) {
    fail("expected an integer, got " + describe_json(*value_));
  }
  if (v < double(min_value) || v > double(max_value)) {
    fail("expected an integer in [" + std::to_string(min_value) + ", " + std::to_string(max_value) +
         "], got " + describe_json(*value_));
  }
  return int64_t(v);
}

double JsonCursor::as_quantity(Dimension dimension) const {
  if (!value_->is_string()) {
    fail(std::string("expected a string with a unit such as ") + quantity_example(dimension) +
         ", got " + describe_json(*value_));
  }
  try {
    return parse_quantity(value_->get<std::string>(), dimension);
  } catch (const UnitError& e) {
    fail(e.what());
  }
}

double JsonCursor::as_positive_quantity(Dimension dimension) const {
  const double v = as_quantity(dimension);
  if (!(v > 0)) fail("must be greater than zero, got \"" + value_->get<std::string>() + "\"");
  return v;
}

void JsonCursor::fail(const std::string& message) const {
  throw InputError(file_, path_or_root(), message);
}

std::string describe_json(const nlohmann::json& value) {
  std::string dumped = value.dump();
  if (dumped.size() > 40) dumped = dumped.substr(0, 37) + "...";
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "boolean " + dumped;
    case nlohmann::json::value_t::string:
      return "string " + dumped;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "number " + dumped;
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    default:
      return "a value of another type";
  }
}

std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  return best_distance <= limit ? best : "";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

nlohmann::json parse_json_text(const std::string& text, const std::string& file) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InputError(file, "", "empty file (expected a JSON object)");
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // Translate the byte offset into line:column for people.
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string detail = e.what();
    const size_t colon = detail.rfind(": ");
    if (colon != std::string::npos) detail = detail.substr(colon + 2);
    throw InputError(file, "",
                     "not valid JSON at line " + std::to_string(line) + " column " +
                         std::to_string(column) + ": " + detail);
  }
}

nlohmann::json read_json_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "", "cannot open file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(file, "", "cannot read file");
  return parse_json_text(buffer.str(), file);
}

}  // namespace replisim::core
