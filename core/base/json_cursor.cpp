#include "core/base/json_cursor.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <sys/stat.h>

#include "core/base/error.h"

namespace replisim::core {
namespace {

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

const std::string& SourceMap::file_of(const std::string& path) const {
  std::string p = path;
  for (;;) {
    auto found = files_.find(p);
    if (found != files_.end()) return found->second;
    if (p.empty()) return root_file_;
    p = p.substr(0, p.find_last_of('/'));
  }
}

void SourceMap::assign(const std::string& path, const std::string& file) {
  auto it = files_.lower_bound(path + "/");
  while (it != files_.end() && it->first.compare(0, path.size() + 1, path + "/") == 0) {
    it = files_.erase(it);
  }
  files_[path] = file;
}

void SourceMap::copy_from(const SourceMap& other, const std::string& path) {
  assign(path, other.file_of(path));
  const std::string below = path + "/";
  for (auto it = other.files_.lower_bound(below);
       it != other.files_.end() && it->first.compare(0, below.size(), below) == 0; ++it) {
    files_[it->first] = it->second;
  }
}

JsonCursor::JsonCursor(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

JsonCursor::JsonCursor(const nlohmann::json& value, const SourceMap* sources, std::string path)
    : value_(&value), sources_(sources), path_(std::move(path)) {}

JsonCursor JsonCursor::child(const nlohmann::json& value, std::string path) const {
  JsonCursor c(value, file_, std::move(path));
  c.sources_ = sources_;
  return c;
}

bool JsonCursor::has(const std::string& key) const {
  return value_->is_object() && value_->contains(key);
}

JsonCursor JsonCursor::at(const std::string& key) const {
  expect_object();
  auto it = value_->find(key);
  const std::string child_path = path_ + "/" + escape_pointer_token(key);
  if (it == value_->end()) {
    // The file that removed it (a null in an including file), if one did; else this object's.
    throw InputError(sources_ ? sources_->file_of(child_path) : file_, child_path,
                     "required field missing");
  }
  return child(*it, child_path);
}

JsonCursor JsonCursor::at(size_t index) const {
  expect_array();
  if (index >= value_->size()) fail("index " + std::to_string(index) + " out of range");
  return child((*value_)[index], path_ + "/" + std::to_string(index));
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
    const std::string key_path = path_ + "/" + escape_pointer_token(it.key());
    throw InputError(sources_ ? sources_->file_of(key_path) : file_, key_path, message);
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

double JsonCursor::as_quantity_in(Dimension dimension, double min_value, double max_value) const {
  const double v = as_quantity(dimension);
  if (v < min_value || v > max_value) {
    if (min_value > 0 && v <= 0) {
      fail("must be greater than zero, got \"" + value_->get<std::string>() + "\"");
    }
    fail("must be between " + format_quantity(min_value, dimension) + " and " +
         format_quantity(max_value, dimension) + ", got \"" + value_->get<std::string>() + "\"");
  }
  return v;
}

double JsonCursor::as_number_in(double min_value, double max_value) const {
  const double v = as_number();
  if (v < min_value || v > max_value) {
    std::ostringstream message;
    message << "must be between " << min_value << " and " << max_value << ", got "
            << describe_json(*value_);
    fail(message.str());
  }
  return v;
}

void JsonCursor::fail(const std::string& message) const {
  throw InputError(file(), path_or_root(), message);
}

std::string describe_json(const nlohmann::json& value) {
  // Containers are described without serialising them: they may be large or deeply nested.
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  std::string dumped = dump_json(value);
  if (dumped.size() > 40) dumped = dumped.substr(0, 37) + "...";
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "boolean " + dumped;
    case nlohmann::json::value_t::string:
      return "string " + dumped;
    default:
      return "number " + dumped;
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

namespace {

// A first, read-only pass over a document (nlohmann's SAX interface): tracks the JSON pointer
// of the value being parsed, so that structural errors (depth, repeated keys) can name where
// they are, and keeps the first syntax error. It builds nothing; the document is built by a
// second, plain parse. (nlohmann's callback parser would do both at once, but it rescans each
// container when a child object closes: quadratic in the members of one object.)
class ParseTracker {
 public:
  using json = nlohmann::json;
  ParseTracker(const std::string& file, size_t max_values) : file_(file), max_values_(max_values) {}

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return value(); }
  bool string(json::string_t&) { return value(); }
  bool binary(json::binary_t&) { return value(); }
  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& key) {
    Frame& top = frames_.back();
    top.key = key;
    if (!top.keys.insert(top.key).second) {
      throw InputError(file_, path(), "this key appears twice in its object");
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error_position = position;
    error_id = e.id;
    error_what = e.what();
    return false;
  }

  size_t error_position = 0;
  int error_id = 0;
  std::string error_what;

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;  // objects: the current member
    long next_index;  // arrays: elements seen so far
  };

  bool value() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().next_index;
    if (++values_ > max_values_) {
      throw InputError(file_, path(),
                       "more than " + std::to_string(max_values_) +
                           " JSON values: refused before building the document (a few hundred "
                           "bytes of memory each)");
    }
    return true;
  }
  bool open(bool object) {
    value();
    frames_.push_back({object, {}, "", 0});
    if (int(frames_.size()) > kMaxJsonDepth) {
      throw InputError(file_, path(),
                       "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }

  std::string path() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (f.object) {
        if (!f.key.empty() || !f.keys.empty()) out += "/" + escape_pointer_token(f.key);
      } else if (f.next_index > 0) {
        out += "/" + std::to_string(f.next_index - 1);
      }
    }
    return out.empty() ? "/" : out;
  }

  const std::string& file_;
  size_t max_values_;
  size_t values_ = 0;
  std::vector<Frame> frames_;
};

// nlohmann's messages read "[json.exception.parse_error.101] parse error at line 1, column 5:
// syntax error while parsing value - invalid literal; last read: 'tru'"; keep what follows the
// position.
std::string parse_error_detail(const std::string& what) {
  const size_t column = what.find("column ");
  if (column != std::string::npos) {
    const size_t colon = what.find(": ", column);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  // "[json.exception.out_of_range.406] number overflow parsing '1e400'": drop the tag.
  const size_t tag_end = what.find("] ");
  return tag_end == std::string::npos ? what : what.substr(tag_end + 2);
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& file,
                               size_t max_values) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InputError(file, "", "empty file (expected a JSON object)");
  }
  ParseTracker tracker(file, max_values);
  if (!nlohmann::json::sax_parse(text, &tracker)) {
    // Numbers beyond double range ("1e400", nlohmann's error 406) and similar.
    if (tracker.error_id == 406) {
      throw InputError(file, "", "not usable JSON: " + parse_error_detail(tracker.error_what));
    }
    // Translate the byte offset into line:column for people.
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < tracker.error_position && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw InputError(file, "",
                     "not valid JSON at line " + std::to_string(line) + " column " +
                         std::to_string(column) + ": " + parse_error_detail(tracker.error_what));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, "", std::string("not usable JSON: ") + parse_error_detail(e.what()));
  }
}

nlohmann::json read_json_file(const std::string& file, size_t max_values) {
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0) {
    throw InputError(file, "", std::string("cannot open file: ") + std::strerror(errno));
  }
  if (S_ISDIR(info.st_mode)) throw InputError(file, "", "is a directory, not a JSON file");
  if (!S_ISREG(info.st_mode)) throw InputError(file, "", "is not a regular file");
  if (size_t(info.st_size) > kMaxJsonFileBytes) {
    throw InputError(file, "",
                     "is larger than " + std::to_string(kMaxJsonFileBytes >> 20) + " MiB");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "", "cannot open file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(file, "", "cannot read file");
  return parse_json_text(buffer.str(), file, max_values);
}

std::string dump_json(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace replisim::core
