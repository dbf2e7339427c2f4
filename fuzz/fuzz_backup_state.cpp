// A backup's manifest, training_state.json (BackupAndRestore): where the relaunched fit resumes,
// its running loss and metrics, the seed streams and the History. The target restores it into a
// small model and trains on from there, so a state that passes the checks is also used.
//
// Input: [mode byte][text]. Mode bit 0 set: the text is the "state" object and the harness wraps
// it in the format, version and the CRC32C of its state, as BackupAndRestore writes it, so the
// fuzzer reaches the fields past the checksum. Bit 0 clear: the text is the whole file as is (the
// outer checks: format, version, checksum). The model beside it (config.json, weights, optimizer
// state) is a real backup's, taken once at start-up; those files have their own targets
// (fuzz_model_config, fuzz_safetensors).
//
// OSPREY_FUZZ_WRITE_SEEDS=DIR writes the start-up backups' own manifests there in both modes,
// as seeds (fuzz/make_corpus.sh).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_target.h"
#include "osprey/core/rng.h"
#include "osprey/io/crc32c.h"
#include "osprey/io/json.h"
#include "osprey/io/posix_file.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/name_scope.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/callbacks/backup_and_restore.h"
#include "osprey/train/model.h"

namespace {

namespace fs = std::filesystem;
using namespace osprey;

constexpr const char* kState = "training_state.json";

// One small job: 8 rows in batches of 4 (2 steps per epoch), 2 epochs, Adam, a metric with a
// running state and a seeded Dropout, so every part of the state has something to restore.
struct Job {
  train::Model model;
  Tensor x, y;
  fs::path root;       // this process's scratch folder
  fs::path template_;  // a real backup's model.safetensors and optimizer.safetensors

  Job()
      : model([] {
          set_global_seed(3);
          nn::clear_session();
          Model m = Sequential(
              {layers::Dense(4, "relu"), layers::Dropout(0.25, {.seed = 7}), layers::Dense(2)},
              {.input_shape = {3}});
          m.compile("adam", "mse", {"mae"});
          return m;
        }()),
        x(random_normal({8, 3}, {.seed = 1})),
        y(random_normal({8, 2}, {.seed = 2})),
        root(fs::temp_directory_path() / ("osprey_fuzz_backup_" + std::to_string(::getpid()))) {
    fs::remove_all(root);
    // Backups every step, kept: ckpt-1 is mid-epoch (a running state), ckpt-2 an epoch's end.
    const fs::path first = root / "first";
    fit(first, "1", false, 1);
    template_ = first / "ckpt-000000000001";
    if (const char* seeds = std::getenv("OSPREY_FUZZ_WRITE_SEEDS")) write_seeds(first, seeds);
  }
  ~Job() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }

  void fit(const fs::path& dir, const std::string& save_freq, bool delete_checkpoint, int epochs) {
    auto backup = std::make_shared<train::BackupAndRestore>(
        dir, train::BackupAndRestoreOptions{.save_freq = save_freq,
                                            .delete_checkpoint = delete_checkpoint});
    model.fit(
        x, y,
        {.batch_size = 4, .epochs = epochs, .verbose = 0, .callbacks = {backup}, .shuffle = false});
  }

  static void write_seeds(const fs::path& dir, const fs::path& out) {
    fs::create_directories(out);
    for (const fs::path& b : train::BackupAndRestore::list_backups(dir)) {
      const std::string file = io::read_file(b / kState);
      const std::string name = b.filename().string();
      std::ofstream(out / (name + "_file.bin"), std::ios::binary) << '\0' << file;
      std::ofstream(out / (name + "_state.bin"), std::ios::binary)
          << '\1' << nlohmann::json::parse(file).at("state").dump();
    }
  }

  // A backup folder holding the template's model and `manifest`, then a fit that resumes from
  // it (backups every 2 steps, removed when it ends).
  void run(const std::string& manifest) {
    const fs::path dir = root / "run";
    const fs::path backup = dir / "ckpt-000000000001";
    fs::remove_all(dir);
    fs::create_directories(backup);
    for (const fs::directory_entry& f : fs::directory_iterator(template_)) {
      if (f.path().filename() != kState) fs::copy_file(f.path(), backup / f.path().filename());
    }
    std::ofstream(backup / kState, std::ios::binary) << manifest;
    fuzz::expect_refusal_or_success([&] { fit(dir, "2", true, 2); });
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Job job;
  if (size == 0) return 0;
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  if ((data[0] & 1) == 0) {
    job.run(std::string(text));
    return 0;
  }
  // The state as BackupAndRestore hashes it: parsed and dumped again, as the writer dumps it.
  nlohmann::json state;
  try {
    state = io::parse_json(text, "fuzz input");
  } catch (const Error&) {
    return 0;
  }
  const nlohmann::json file = {{"format", "osprey.backup"},
                               {"format_version", 1},
                               {"state", state},
                               {"crc32c", fmt::format("{:08x}", io::crc32c(state.dump()))}};
  job.run(file.dump());
  return 0;
}
