#include "osprey/io/atomic_directory.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <stdexcept>

#include "osprey/core/error.h"
#include "osprey/io/atomic_file.h"
#include "osprey/io/io_test_util.h"

namespace osprey::io {
namespace {

namespace fs = std::filesystem;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

void write_save(const fs::path& dir, const std::string& tag) {
  write_bytes(dir / "config.json", "{\"v\": \"" + tag + "\"}");
  fs::create_directories(dir / "assets");
  write_bytes(dir / "assets" / "vocab.txt", tag);
}

TEST(AtomicDirectoryTest, CreatesTheDirectoryWhenItDoesNotExist) {
  TempDir tmp;
  atomic_write_directory(tmp / "save", [](const fs::path& d) { write_save(d, "one"); });
  EXPECT_EQ(read_bytes(tmp / "save" / "assets" / "vocab.txt"), "one");
  EXPECT_EQ(tmp.entries(), std::vector<std::string>{"save"});
}

TEST(AtomicDirectoryTest, ReplacesAnExistingSaveWithNoOldFileLeft) {
  TempDir tmp;
  fs::create_directories(tmp / "save");
  write_bytes(tmp / "save" / "stale.bin", "from the old save");
  write_save(tmp / "save", "old");
  atomic_write_directory(tmp / "save", [](const fs::path& d) { write_save(d, "new"); });
  EXPECT_EQ(TempDir::list(tmp / "save"), (std::vector<std::string>{"assets", "config.json"}));
  EXPECT_EQ(read_bytes(tmp / "save" / "config.json"), "{\"v\": \"new\"}");
  EXPECT_EQ(tmp.entries(), std::vector<std::string>{"save"});
}

TEST(AtomicDirectoryTest, AFailureWhileFillingLeavesTheOldSaveIntact) {
  TempDir tmp;
  fs::create_directories(tmp / "save");
  write_save(tmp / "save", "old");
  EXPECT_THROW(atomic_write_directory(tmp / "save",
                                      [](const fs::path& d) {
                                        write_save(d, "half");
                                        throw std::runtime_error("disk on fire");
                                      }),
               std::runtime_error);
  EXPECT_EQ(read_bytes(tmp / "save" / "config.json"), "{\"v\": \"old\"}");
  EXPECT_EQ(tmp.entries(), std::vector<std::string>{"save"});
}

TEST(AtomicDirectoryTest, FilesCanBeWrittenAtomicallyInsideTheStagingDirectory) {
  TempDir tmp;
  {
    AtomicDirectoryWriter w(tmp / "save/");  // a trailing slash names the same target
    EXPECT_EQ(w.staging().parent_path(), tmp.path());
    atomic_write_file(w.path_for("a.json"), "{}");
    EXPECT_FALSE(fs::exists(tmp / "save"));
    w.commit();
  }
  EXPECT_EQ(read_bytes(tmp / "save" / "a.json"), "{}");
  EXPECT_EQ(tmp.entries(), std::vector<std::string>{"save"});
}

TEST(AtomicDirectoryTest, RefusesToReplaceAFileWithADirectory) {
  TempDir tmp;
  write_bytes(tmp / "save", "i am a file");
  EXPECT_THROW(AtomicDirectoryWriter w(tmp / "save"), IoError);
  EXPECT_EQ(read_bytes(tmp / "save"), "i am a file");
}

TEST(AtomicDirectoryTest, RepeatedSavesKeepExactlyOneDirectory) {
  TempDir tmp;
  for (int i = 0; i < 5; ++i) {
    atomic_write_directory(tmp / "ckpt",
                           [&](const fs::path& d) { write_save(d, std::to_string(i)); });
  }
  EXPECT_EQ(read_bytes(tmp / "ckpt" / "assets" / "vocab.txt"), "4");
  EXPECT_EQ(tmp.entries(), std::vector<std::string>{"ckpt"});
}

// What kill -9 during earlier saves leaves ("<target>.tmp-<dead pid>-*", and an older osprey's
// "<target>.tmp-XXXXXX") goes with the next save of the same target; a running process's staging
// (this one's, pid 1's) stays.
TEST(AtomicDirectoryTest, TheNextSaveRemovesStagingLeftByKilledSaves) {
  TempDir tmp;
  const std::string live_self = fmt::format("ckpt.tmp-{}-zzzzzz", ::getpid());
  const std::vector<std::string> left = {"ckpt.tmp-999999999-abcdef", "ckpt.tmp-abcdef", live_self,
                                         "ckpt.tmp-1-qqqqqq", "other.tmp-999999999-abcdef"};
  for (const std::string& name : left) {
    fs::create_directories(tmp / name / "assets");
    write_bytes(tmp / name / "config.json", "{}");
  }
  write_bytes(tmp / "ckpt.json.tmp-999999999-abcdef", "a file's temporary");
  atomic_write_directory(tmp / "ckpt", [](const fs::path& d) { write_save(d, "new"); });
  EXPECT_EQ(tmp.entries(),
            (std::vector<std::string>{"ckpt", "ckpt.json.tmp-999999999-abcdef", "ckpt.tmp-1-qqqqqq",
                                      live_self, "other.tmp-999999999-abcdef"}));
  atomic_write_file(tmp / "ckpt.json", "{}");  // the same rule for files
  EXPECT_EQ(tmp.entries(), (std::vector<std::string>{"ckpt", "ckpt.json", "ckpt.tmp-1-qqqqqq",
                                                     live_self, "other.tmp-999999999-abcdef"}));
}

TEST(AtomicDirectoryTest, DestinationsThatCannotBeWrittenAreRefusedBeforehand) {
  TempDir tmp;
  write_bytes(tmp / "a_file", "x");
  EXPECT_NO_THROW(check_directory_destination(tmp / "new" / "deeper" / "model"));
  EXPECT_FALSE(fs::exists(tmp / "new")) << "the check creates nothing";
  fs::create_directories(tmp / "existing");
  EXPECT_NO_THROW(check_directory_destination(tmp / "existing"));
  try {
    check_directory_destination(tmp / "a_file" / "model");
    ADD_FAILURE() << "no error below a file";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), (tmp / "a_file").string() +
                                         ": is a file where a folder is expected (to save " +
                                         (tmp / "a_file" / "model").string() + ")");
  }
  try {
    check_directory_destination(tmp / "a_file");
    ADD_FAILURE() << "no error onto a file";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), (tmp / "a_file").string() +
                                         ": exists and is not a directory; cannot save a model "
                                         "there");
  }
}

}  // namespace
}  // namespace osprey::io
