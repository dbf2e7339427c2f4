#include "osprey/train/chief_writes.h"

#include <fmt/format.h>

#include "osprey/io/temporary_directory.h"

namespace osprey::train {

namespace fs = std::filesystem;

void write_on_chief(const Strategy& strategy, const fs::path& target,
                    const std::function<void(const fs::path&)>& write) {
  if (strategy.is_chief()) {
    write(target);
    return;
  }
  const io::TemporaryDirectory temp(fmt::format("osprey-worker{}", strategy.worker_rank()));
  const fs::path name = target.lexically_normal().has_filename()
                            ? target.lexically_normal().filename()
                            : target.lexically_normal().parent_path().filename();
  write(temp.path() / name);
}

}  // namespace osprey::train
