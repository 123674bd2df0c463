// Shell-style wildcard matching for names in scenarios ("w*/gpu*", "conv*").
#pragma once

#include <string>

namespace replisim::core {

// True when `text` matches `pattern`, where '*' matches any run of characters (including none)
// and '?' any one character; everything else matches itself. Iterative, linear in practice.
bool glob_match(const std::string& pattern, const std::string& text);

// True when `text` contains '*' or '?'.
inline bool is_glob(const std::string& text) {
  return text.find_first_of("*?") != std::string::npos;
}

}  // namespace replisim::core
