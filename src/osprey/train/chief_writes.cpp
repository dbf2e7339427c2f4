#include "osprey/train/chief_writes.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "osprey/core/error.h"

namespace osprey::train {

namespace {

namespace fs = std::filesystem;

// A private folder in the system's temporary directory, removed with everything in it.
class WorkerTemp {
 public:
  explicit WorkerTemp(int rank) {
    std::string templ =
        (fs::temp_directory_path() / fmt::format("osprey-worker{}-XXXXXX", rank)).string();
    OSPREY_CHECK_T(IoError, ::mkdtemp(templ.data()) != nullptr,
                   "worker {}: cannot create its temporary save folder {}: {}", rank, templ,
                   std::generic_category().message(errno));
    path_ = templ;
  }
  ~WorkerTemp() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  WorkerTemp(const WorkerTemp&) = delete;
  WorkerTemp& operator=(const WorkerTemp&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

void write_on_chief(const Strategy& strategy, const fs::path& target,
                    const std::function<void(const fs::path&)>& write) {
  if (strategy.is_chief()) {
    write(target);
    return;
  }
  const WorkerTemp temp(strategy.worker_rank());
  const fs::path name = target.lexically_normal().has_filename()
                            ? target.lexically_normal().filename()
                            : target.lexically_normal().parent_path().filename();
  write(temp.path() / name);
}

}  // namespace osprey::train
