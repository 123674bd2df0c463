// Scratch directories: new and private each time, removed at the end unless kept, and a clear
// error naming the place when $TMPDIR cannot hold one.
#include "core/base/temp_dir.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/base/error.h"

namespace replisim::core {
namespace {

namespace fs = std::filesystem;

TEST(TempDir, EachIsNewPrivateAndRemovedWithItsFilesUnlessKept) {
  std::string removed, kept;
  {
    ScopedTempDir a("replisim-test"), b("replisim-test");
    EXPECT_NE(a.path(), b.path());
    EXPECT_NE(a.path().find("/replisim-test-"), std::string::npos) << a.path();
    struct stat st {};
    ASSERT_EQ(::stat(a.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    std::ofstream(a.path() + "/file") << "x";
    fs::create_directory(a.path() + "/sub");
    removed = a.path();
    kept = b.path();
    b.keep();
  }
  EXPECT_FALSE(fs::exists(removed));
  EXPECT_TRUE(fs::is_directory(kept));
  fs::remove_all(kept);
}

TEST(TempDir, AMissingTmpdirIsAnErrorNamingIt) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("TMPDIR", "/nonexistent-replisim-tmpdir", 1);
  try {
    make_temp_dir("replisim-test");
    ADD_FAILURE() << "no error";
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-replisim-tmpdir/replisim-test-XXXXXX"),
              std::string::npos)
        << e.what();
  }
  if (old != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
}

}  // namespace
}  // namespace replisim::core
