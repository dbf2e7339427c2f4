// FileReader: sequential reads of a raw or gzip-compressed file, told apart by content (the
// gzip magic bytes), not by name. It is zlib's gzFile underneath (transparent for raw files,
// multi-member gzip included); this class adds the file name and offsets to every error and a
// bound on how large the decompressed data can be, which the readers check a header against
// before they allocate. The IDX and CSV readers (idx.h, csv.h) and their Datasets use it:
//   auto ds = idx_dataset({"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"});
//   FileReader f("data.csv.gz");  std::string line;  while (f.read_line(line)) {...}
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace osprey::data {

class FileReader {
 public:
  // Opens path; throws IoError naming it when it cannot be opened. `what` starts messages
  // ("IDX file", "CSV file").
  explicit FileReader(std::string path, std::string what = "file");
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Reads up to n bytes into dst; fewer only at the end of the data. Throws IoError (with the
  // offset) when the gzip stream is corrupt or ends before its trailer.
  size_t read(void* dst, size_t n);
  // Reads one line without its "\n" (or "\r\n"); false at the end of the data.
  bool read_line(std::string& line);

  const std::string& path() const noexcept { return path_; }
  const std::string& what() const noexcept { return what_; }
  bool is_gzip() const noexcept { return gzip_; }
  // Bytes of (decompressed) data consumed so far.
  uint64_t offset() const noexcept { return offset_; }
  // Size of the file on disk.
  uint64_t file_size() const noexcept { return file_size_; }
  // Upper bound on the size of the data: the file size for a raw file; for gzip, deflate's
  // best ratio (1032:1) times the compressed size.
  uint64_t max_data_size() const noexcept;

 private:
  size_t read_raw(void* dst, size_t n);  // from zlib, bypassing the line buffer
  [[noreturn]] void fail_stream(int code, const char* msg) const;

  std::string path_, what_;
  void* file_ = nullptr;  // gzFile
  bool gzip_ = false;
  uint64_t file_size_ = 0;
  uint64_t offset_ = 0;       // consumed by the caller
  std::vector<char> buffer_;  // for read_line
  size_t buf_begin_ = 0, buf_end_ = 0;
};

}  // namespace osprey::data
