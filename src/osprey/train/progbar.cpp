#include "osprey/train/progbar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>

namespace osprey::train {

namespace {

// The stream a bar line is open on (drawn in place, not yet ended with its newline): one per
// process, as the terminal is.
std::atomic<std::FILE*> g_open_line{nullptr};

}  // namespace

bool ProgbarLogger::draws_in_place(std::FILE* out) {
  if (isatty(fileno(out)) == 0) return false;
  for (const char* launcher_rank : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(launcher_rank) != nullptr) return false;
  }
  return true;
}

void ProgbarLogger::end_open_line() {
  if (std::FILE* out = g_open_line.exchange(nullptr)) {
    std::fputc('\n', out);
    std::fflush(out);
  }
}

ProgbarLogger::ProgbarLogger(std::FILE* out, int interactive)
    : out_(out), interactive_(interactive < 0 ? draws_in_place(out) : interactive != 0) {}

// fit ended by an error mid-epoch: the bar's line is ended as the error unwinds.
ProgbarLogger::~ProgbarLogger() {
  if (g_open_line.load() == out_) end_open_line();
}

namespace {
std::string step_time(double seconds_per_step) {
  if (seconds_per_step >= 1) return fmt::format("{:.0f}s/step", seconds_per_step);
  if (seconds_per_step >= 1e-3) return fmt::format("{:.0f}ms/step", seconds_per_step * 1e3);
  return fmt::format("{:.0f}us/step", seconds_per_step * 1e6);
}
}  // namespace

std::string ProgbarLogger::format_line(int64_t done, int64_t total, double seconds,
                                       const Logs& logs) {
  constexpr int kWidth = 30;
  std::string line;
  if (total > 0) {
    const int digits = static_cast<int>(std::to_string(total).size());
    line = fmt::format("{:>{}}/{} [", done, digits, total);
    // Keras's drawing: '=' up to the current step, '>' at it, '.' for the rest.
    const int filled = static_cast<int>(kWidth * std::min<int64_t>(done, total) / total);
    if (filled > 0) {
      line += std::string(static_cast<size_t>(filled - 1), '=') + (done < total ? ">" : "=");
    }
    line += std::string(static_cast<size_t>(kWidth - filled), '.');
    line += "]";
  } else {
    line = fmt::format("{}/Unknown", done);
  }
  const double per_step = done > 0 ? seconds / static_cast<double>(done) : 0.0;
  if (total > 0 && done < total) {
    line += fmt::format(" - ETA: {:.0f}s", per_step * static_cast<double>(total - done));
  } else {
    line += fmt::format(" - {:.0f}s {}", seconds, step_time(per_step));
  }
  return line + logs.format();
}

void ProgbarLogger::on_epoch_begin(int epoch, const Logs&) {
  if (params().verbose <= 0) return;
  fmt::print(out_, "Epoch {}/{}\n", epoch + 1, params().epochs);
  std::fflush(out_);
  seen_ = 0;
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

void ProgbarLogger::draw(int64_t done, const Logs& logs, bool final) {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const std::string line = format_line(done, params().steps, seconds, logs);
  if (interactive_ && params().verbose == 1) {
    fmt::print(out_, "\r{}\x1b[K{}", line, final ? "\n" : "");
    g_open_line.store(final ? nullptr : out_);
  } else if (final) {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
  last_draw_ = now;
}

void ProgbarLogger::on_train_batch_end(int64_t batch, const Logs& logs) {
  seen_ = batch + 1;
  if (params().verbose != 1 || !interactive_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(50)) return;
  draw(seen_, logs, false);
}

void ProgbarLogger::on_epoch_end(int epoch, const Logs& logs) {
  if (params().verbose <= 0) return;
  draw(seen_, logs, true);
}

void ProgbarLogger::on_train_end(const Logs&) {
  if (g_open_line.load() == out_) end_open_line();
}

}  // namespace osprey::train
