// Scenario includes: "include": ["platform.json", ...] merges other files before the scenario's
// own fields, remembering which file every part came from so errors can name it.
#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/scenario.h"

namespace replisim::core {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxIncludeDepth = 16;

// Deep-merges `overlay` (whose parts come from `overlay_sources`) into `base` at `path`.
void merge(nlohmann::json& base, const nlohmann::json& overlay, const std::string& path,
           SourceMap& sources, const SourceMap& overlay_sources) {
  for (auto it = overlay.begin(); it != overlay.end(); ++it) {
    const std::string child = path + "/" + escape_pointer_token(it.key());
    auto existing = base.find(it.key());
    if (existing != base.end() && existing->is_object() && it->is_object()) {
      merge(*existing, *it, child, sources, overlay_sources);
    } else {
      base[it.key()] = *it;
      sources.copy_from(overlay_sources, child);
    }
  }
}

struct Loaded {
  nlohmann::json json;
  SourceMap sources;
  std::vector<std::string> files;
};

Loaded load(const std::string& file, std::vector<std::string>& chain) {
  nlohmann::json own = read_json_file(file);
  Loaded result{nlohmann::json::object(), SourceMap(file), {file}};
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
      const fs::path target = dir / entry.as_string();
      std::error_code error;
      if (!fs::exists(target, error)) entry.fail("included file " + target.string() + " not found");
      const std::string canonical = fs::weakly_canonical(target, error).string();
      if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
        std::string cycle;
        for (const std::string& f : chain) cycle += f + " -> ";
        entry.fail("include cycle: " + cycle + canonical);
      }
      if (chain.size() >= kMaxIncludeDepth) entry.fail("includes nest too deeply");
      chain.push_back(canonical);
      Loaded included = load(target.string(), chain);
      chain.pop_back();
      merge(result.json, included.json, "", result.sources, included.sources);
      result.files.insert(result.files.end(), included.files.begin(), included.files.end());
    }
    own.erase("include");
  }
  merge(result.json, own, "", result.sources, SourceMap(file));
  return result;
}

}  // namespace

ScenarioDocument load_scenario_document(const std::string& file) {
  std::error_code error;
  std::vector<std::string> chain = {fs::weakly_canonical(fs::path(file), error).string()};
  Loaded loaded = load(file, chain);
  return {std::move(loaded.json), std::move(loaded.sources), std::move(loaded.files)};
}

}  // namespace replisim::core
