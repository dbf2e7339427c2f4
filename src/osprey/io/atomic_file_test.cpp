#include "osprey/io/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <stdexcept>

#include "osprey/core/error.h"
#include "osprey/io/crc32c.h"
#include "osprey/io/io_test_util.h"
#include "osprey/io/posix_file.h"

namespace osprey::io {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

TEST(AtomicFileTest, WritesANewFile) {
  TempDir dir;
  atomic_write_file(dir / "a.txt", "hello");
  EXPECT_EQ(read_bytes(dir / "a.txt"), "hello");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"a.txt"});
}

TEST(AtomicFileTest, ReplacesAnExistingFileCompletely) {
  TempDir dir;
  write_bytes(dir / "a.txt", std::string(10000, 'o'));
  atomic_write_file(dir / "a.txt", "new");
  EXPECT_EQ(read_bytes(dir / "a.txt"), "new");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"a.txt"});
}

TEST(AtomicFileTest, AThrowMidWayLeavesTheOldFileIntactAndNoTemporary) {
  TempDir dir;
  write_bytes(dir / "model.bin", "old content");
  EXPECT_THROW(atomic_write_file(dir / "model.bin",
                                 [](AtomicFileWriter& w) {
                                   w.write(std::string(200000, 'n'));  // past the buffer: on disk
                                   throw std::runtime_error("simulated failure");
                                 }),
               std::runtime_error);
  EXPECT_EQ(read_bytes(dir / "model.bin"), "old content");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.bin"});
}

TEST(AtomicFileTest, AWriterDestroyedWithoutCommitLeavesNothingBehind) {
  TempDir dir;
  {
    AtomicFileWriter w(dir / "x");
    w.write("partial");
    EXPECT_TRUE(std::filesystem::exists(w.temporary_path()));
    EXPECT_EQ(w.temporary_path().parent_path(), dir.path());  // same directory: rename is atomic
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicFileTest, TheTargetIsUntouchedUntilCommit) {
  TempDir dir;
  write_bytes(dir / "f", "old");
  AtomicFileWriter w(dir / "f");
  w.write(std::string(100000, 'z'));
  EXPECT_EQ(read_bytes(dir / "f"), "old");
  w.commit();
  EXPECT_EQ(read_bytes(dir / "f"), std::string(100000, 'z'));
  EXPECT_TRUE(w.committed());
}

TEST(AtomicFileTest, KeepsARunningChecksumOfTheBytesWritten) {
  TempDir dir;
  const uint32_t crc = atomic_write_file(dir / "c", [](AtomicFileWriter& w) {
    w.write("1234");
    w.write(std::string(70000, 'q'));
    w.write("56789");
  });
  EXPECT_EQ(crc, crc32c(read_bytes(dir / "c")));
  EXPECT_EQ(read_bytes(dir / "c").size(), 70009u);
}

TEST(AtomicFileTest, MissingDirectoryGivesIoErrorNamingThePathAndErrno) {
  TempDir dir;
  const auto target = dir.path() / "no" / "such" / "f.json";
  try {
    atomic_write_file(target, "x");
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(target.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  }
}

TEST(AtomicFileTest, NewFilesGetTheUsualPermissionsNotThoseOfATemporary) {
  TempDir dir;
  const mode_t old = ::umask(022);
  atomic_write_file(dir / "p", "x");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat((dir / "p").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(AtomicFileTest, WritingAfterCommitIsAnError) {
  TempDir dir;
  AtomicFileWriter w(dir / "f");
  w.commit();
  EXPECT_THROW(w.write("late"), IoError);
  EXPECT_EQ(read_bytes(dir / "f"), "");
}

TEST(PosixFileTest, ReadingPastTheEndNamesTheOffset) {
  TempDir dir;
  write_bytes(dir / "short", "abc");
  const File f = File::open_read(dir / "short");
  char buf[8];
  try {
    f.read_exact_at(buf, 8, 1);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected end of file at offset 3"), std::string::npos)
        << e.what();
  }
}

TEST(PosixFileTest, OpeningAMissingFileNamesItAndTheErrno) {
  try {
    read_file("/nonexistent/osprey/file");
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(),
                 "/nonexistent/osprey/file: cannot open for reading: No such file or directory");
  }
}

}  // namespace
}  // namespace osprey::io
