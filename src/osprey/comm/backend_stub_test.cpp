// A build without Open MPI or Gloo (OSPREY_WITH_MPI / OSPREY_WITH_GLOO off) still compiles and
// says what is missing when asked for multi-process work. This binary links the stubs themselves
// (comm/CMakeLists.txt), so it runs in every build; tests/multi_worker covers the real backends.
#include <gtest/gtest.h>

#include <string>

#include "osprey/comm/gloo.h"
#include "osprey/comm/mpi.h"
#include "osprey/core/error.h"

namespace osprey::comm {
namespace {

TEST(BackendStubTest, ABuildWithoutMpiSaysSoWhenAskedForAnMpiCommunicator) {
  EXPECT_FALSE(mpi_built());
  EXPECT_FALSE(gloo_built());
  try {
    make_mpi_communicator();
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("osprey was built without MPI: install libopenmpi-dev"),
              std::string::npos);
  }
  mpi_abort_if_running(1);  // nothing to abort: returns
}

TEST(BackendStubTest, ABuildWithoutGlooSaysSoWhenAskedForAGlooGroup) {
  try {
    GlooGroup group(
        {.rank = 0, .size = 2, .rendezvous = "127.0.0.1:1", .hostname = "", .check_calls = true});
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("osprey was built without Gloo: install libgloo-dev"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace osprey::comm
