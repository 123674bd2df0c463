// Scenario includes: "include": ["platform.json", ...] merges other files before the scenario's
// own fields, remembering which file every part came from so errors can name it.
#include <algorithm>
#include <filesystem>
#include <set>

#include "core/base/error.h"
#include "core/scenario/scenario.h"

namespace replisim::core {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxIncludeDepth = 16;
// Files read per scenario, repeats included: keeps a few small files that include each other
// many times (20^5 loads from 6 files) from running for hours.
constexpr size_t kMaxIncludeLoads = 256;

// Applies `overlay` (whose parts come from `overlay_sources`) to `base` at `path` as a JSON Merge
// Patch (RFC 7386): a null member removes the field, an object merges member by member into an
// object (a field that was not one becomes one), anything else (arrays included) replaces it.
// A removed field stays as a null (a tombstone), so that a file included after another, or the
// file that includes this one, removes it too; `removed` collects the tombstones that removed a
// value; strip_tombstones drops them all once every file is in.
void merge(nlohmann::json& base, const nlohmann::json& overlay, const std::string& path,
           SourceMap& sources, const SourceMap& overlay_sources, std::set<std::string>& removed) {
  for (auto it = overlay.begin(); it != overlay.end(); ++it) {
    const std::string child = path + "/" + escape_pointer_token(it.key());
    if (it->is_null()) {
      const auto existing = base.find(it.key());
      if (existing != base.end() && !existing->is_null()) removed.insert(child);
      base[it.key()] = nullptr;
      sources.copy_from(overlay_sources, child);
      continue;
    }
    if (it->is_object()) {
      auto existing = base.find(it.key());
      if (existing == base.end() || !existing->is_object()) {
        base[it.key()] = nlohmann::json::object();
        sources.copy_from(overlay_sources, child);
      }
      merge(base[it.key()], *it, child, sources, overlay_sources, removed);
    } else {
      base[it.key()] = *it;
      sources.copy_from(overlay_sources, child);
    }
  }
}

// Drops the tombstones merge left in objects (not in arrays, which patches replace whole). One
// that removed nothing (not in `removed`) is an error: no file below it set that field, so its name
// is likely misspelt.
void strip_tombstones(nlohmann::json& value, const std::string& path, const SourceMap& sources,
                      const std::set<std::string>& removed) {
  for (auto it = value.begin(); it != value.end();) {
    const std::string child = path + "/" + escape_pointer_token(it.key());
    if (it->is_null()) {
      if (removed.count(child) == 0) {
        throw InputError(sources.file_of(child), child,
                         "null removes a field that an included file sets, but none sets this "
                         "one (a misspelt name?)");
      }
      it = value.erase(it);
      continue;
    }
    if (it->is_object()) strip_tombstones(*it, child, sources, removed);
    ++it;
  }
}

// The file system's files (read_json_file).
class FileSystemFiles : public ScenarioFiles {
 public:
  Kind kind(const std::string& path) const override {
    std::error_code error;
    if (!fs::exists(path, error)) return Kind::kMissing;
    return fs::is_regular_file(path, error) ? Kind::kFile : Kind::kNotRegular;
  }
  std::string canonical(const std::string& path) const override {
    std::error_code error;
    return fs::weakly_canonical(fs::path(path), error).string();
  }
  nlohmann::json read(const std::string& path, size_t max_values) const override {
    return read_json_file(path, max_values);
  }
};

struct Loaded {
  nlohmann::json json;
  SourceMap sources;
  std::vector<std::string> files;
  std::set<std::string> removed;  // merge's tombstones that removed a value
};

// The values of `json`, itself included (as parse_json_text counts them).
size_t count_values(const nlohmann::json& json) {
  size_t n = 1;
  if (json.is_structured()) {
    for (const auto& item : json) n += count_values(item);
  }
  return n;
}

// Files read so far and the JSON values they held: a scenario's files together stay within
// kMaxIncludeLoads files and kMaxScenarioJsonValues values (each file alone could reach the
// latter, and 256 of them 256 times as much).
struct Reading {
  size_t loads = 0;
  size_t values = 0;
};

Loaded load(const ScenarioFiles& files, const std::string& file, std::vector<std::string>& chain,
            Reading& reading) {
  nlohmann::json own = files.read(file, kMaxScenarioJsonValues);
  reading.values += count_values(own);
  if (reading.values > kMaxScenarioJsonValues) {  // at most twice the bound held at once
    throw InputError(file, "",
                     "this file and those read before it hold more than " +
                         std::to_string(kMaxScenarioJsonValues) +
                         " JSON values in all: a scenario's files together stay within that");
  }
  Loaded result{nlohmann::json::object(), SourceMap(file), {file}, {}};
  const JsonCursor root(own, file);
  root.expect_object();
  if (root.has("include")) {
    const JsonCursor include = root.at("include");
    std::vector<JsonCursor> entries;
    if (include.value().is_string()) {
      entries.push_back(include);
    } else {
      for (size_t i = 0; i < include.size(); ++i) entries.push_back(include.at(i));
    }
    const fs::path dir = fs::path(file).parent_path();
    for (const JsonCursor& entry : entries) {
      const std::string name = entry.as_string();
      if (name.empty()) entry.fail("an included file name is empty");
      const fs::path target = dir / name;
      const ScenarioFiles::Kind kind = files.kind(target.string());
      if (kind == ScenarioFiles::Kind::kMissing) {
        entry.fail("included file " + target.string() + " not found");
      }
      if (kind == ScenarioFiles::Kind::kNotRegular) {
        entry.fail("included " + target.string() + " is not a regular file");
      }
      if (++reading.loads > kMaxIncludeLoads) {
        entry.fail("includes read more than " + std::to_string(kMaxIncludeLoads) +
                   " files in all (repeats counted)");
      }
      const std::string canonical = files.canonical(target.string());
      if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
        std::string cycle;
        for (const std::string& f : chain) cycle += f + " -> ";
        entry.fail("include cycle: " + cycle + canonical);
      }
      if (chain.size() >= kMaxIncludeDepth) entry.fail("includes nest too deeply");
      chain.push_back(canonical);
      Loaded included = load(files, target.string(), chain, reading);
      chain.pop_back();
      merge(result.json, included.json, "", result.sources, included.sources, result.removed);
      result.files.insert(result.files.end(), included.files.begin(), included.files.end());
      result.removed.insert(included.removed.begin(), included.removed.end());
    }
    own.erase("include");
  }
  merge(result.json, own, "", result.sources, SourceMap(file), result.removed);
  return result;
}

}  // namespace

ScenarioFilesInMemory::ScenarioFilesInMemory(std::map<std::string, std::string> files) {
  for (auto& [path, text] : files) files_[canonical(path)] = std::move(text);
}

ScenarioFiles::Kind ScenarioFilesInMemory::kind(const std::string& path) const {
  return files_.count(canonical(path)) > 0 ? Kind::kFile : Kind::kMissing;
}

std::string ScenarioFilesInMemory::canonical(const std::string& path) const {
  return fs::path(path).lexically_normal().string();
}

nlohmann::json ScenarioFilesInMemory::read(const std::string& path, size_t max_values) const {
  const auto found = files_.find(canonical(path));
  if (found == files_.end()) throw InputError(path, "", "cannot open file: not in the set");
  return parse_json_text(found->second, path, max_values);
}

ScenarioDocument load_scenario_document(const std::string& file) {
  return load_scenario_document(file, FileSystemFiles());
}

ScenarioDocument load_scenario_document(const std::string& file, const ScenarioFiles& files) {
  std::vector<std::string> chain = {files.canonical(file)};
  Reading reading;
  Loaded loaded = load(files, file, chain, reading);
  strip_tombstones(loaded.json, "", loaded.sources, loaded.removed);
  return {std::move(loaded.json), std::move(loaded.sources), std::move(loaded.files)};
}

}  // namespace replisim::core
