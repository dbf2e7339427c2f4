// The progress bar (progbar.h): one line per epoch off a terminal (log files, pipes, mpirun's
// pseudo-terminal), and a line drawn in place is ended before what is printed next.
#include "osprey/train/progbar.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace osprey {
namespace {

using train::Callback;
using train::Logs;
using train::ProgbarLogger;

// Sleeps after each batch, so that a bar drawn in place (every 50 ms) would be redrawn in each
// epoch; throws at batch `fail_at` when it is not negative.
struct SlowSteps : Callback {
  explicit SlowSteps(int64_t fail_at = -1) : fail_at_(fail_at) {}
  void on_train_batch_end(int64_t batch, const Logs&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (batch == fail_at_) OSPREY_THROW(ValueError, "SlowSteps: failing at batch {}", batch);
  }
  int64_t fail_at_;
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// What was written to f so far.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::string text;
  std::rewind(f);
  for (int c; (c = std::fgetc(f)) != EOF;) text.push_back(static_cast<char>(c));
  std::fseek(f, 0, SEEK_END);
  return text;
}

Model small_model() {
  nn::clear_session();
  Model model = Sequential({layers::Dense(2)}, {.input_shape = {3}});
  model.compile("sgd", "mse");
  return model;
}

TEST(ProgbarTest, OffATerminalFitPrintsOneLinePerEpochWithoutCarriageReturnsOrEscapes) {
  Model model = small_model();
  const Tensor x = random_normal({40, 3}, {.seed = 1});
  const Tensor y = random_normal({40, 2}, {.seed = 2});
  testing::internal::CaptureStdout();  // stdout becomes a file, as under a launcher's log
  model.fit(
      x, y,
      {.batch_size = 8, .epochs = 3, .verbose = 1, .callbacks = {std::make_shared<SlowSteps>()}});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  const std::vector<std::string> lines = split_lines(out);
  ASSERT_EQ(lines.size(), 6u) << out;
  for (int epoch = 0; epoch < 3; ++epoch) {
    EXPECT_EQ(lines[2 * epoch], "Epoch " + std::to_string(epoch + 1) + "/3");
    EXPECT_TRUE(lines[2 * epoch + 1].starts_with("5/5 [==============================] - "))
        << lines[2 * epoch + 1];
    EXPECT_NE(lines[2 * epoch + 1].find("ms/step - loss: "), std::string::npos)
        << lines[2 * epoch + 1];
  }
}

// Restores an environment variable when it goes out of scope.
class ScopedEnv {
 public:
  explicit ScopedEnv(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// mpirun gives its ranks a pseudo-terminal for stdout and relays it into a pipe or a file: there
// isatty says yes, yet the bar must not redraw.
TEST(ProgbarTest, DrawsInPlaceOnATerminalButNotOnAFileNorUnderAnMpiLauncher) {
  const ScopedEnv ompi("OMPI_COMM_WORLD_SIZE"), pmix("PMIX_RANK"), pmi("PMI_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMIX_RANK");
  unsetenv("PMI_RANK");
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  std::FILE* terminal = std::fopen(ptsname(master), "w");
  ASSERT_NE(terminal, nullptr);
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EXPECT_TRUE(ProgbarLogger::draws_in_place(terminal));
  EXPECT_FALSE(ProgbarLogger::draws_in_place(file));
  for (const char* launcher_rank : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    setenv(launcher_rank, "1", 1);
    EXPECT_FALSE(ProgbarLogger::draws_in_place(terminal)) << launcher_rank;
    unsetenv(launcher_rank);
  }
  std::fclose(file);
  std::fclose(terminal);
  close(master);
}

TEST(ProgbarTest, ALineDrawnInPlaceIsEndedOnceBeforeWhatIsPrintedNext) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgbarLogger bar(f, /*interactive=*/1);
    bar.set_params({.epochs = 1, .steps = 10, .verbose = 1});
    bar.on_epoch_begin(0, {});
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    bar.on_train_batch_end(0, {});
    const std::string open = contents(f);
    ASSERT_EQ(open.rfind("Epoch 1/1\n\r 1/10 [", 0), 0u) << open;
    ASSERT_TRUE(open.ends_with("\x1b[K")) << open;  // the line is open
    ProgbarLogger::end_open_line();
    EXPECT_EQ(contents(f), open + "\n");
    ProgbarLogger::end_open_line();  // nothing open any more: nothing printed
    EXPECT_EQ(contents(f), open + "\n");
  }
  std::fclose(f);
}

TEST(ProgbarTest, AnErrorThatEndsFitMidEpochLeavesTheBarLineEnded) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Model model = small_model();
  const Tensor x = random_normal({40, 3}, {.seed = 1});
  const Tensor y = random_normal({40, 2}, {.seed = 2});
  auto bar = std::make_shared<ProgbarLogger>(f, /*interactive=*/1);
  testing::internal::CaptureStdout();  // fit's own bar (verbose=1) prints there
  EXPECT_THROW(model.fit(x, y,
                         {.batch_size = 8,
                          .epochs = 2,
                          .verbose = 1,
                          .callbacks = {bar, std::make_shared<SlowSteps>(/*fail_at=*/4)}}),
               ValueError);
  testing::internal::GetCapturedStdout();
  bar.reset();  // fit's copies are gone: the bar ends its open line as it goes
  const std::string out = contents(f);
  EXPECT_TRUE(out.starts_with("Epoch 1/2\n\r")) << out;
  EXPECT_TRUE(out.ends_with("\x1b[K\n")) << out;
  std::fclose(f);
}

}  // namespace
}  // namespace osprey
