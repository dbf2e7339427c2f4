// A build without Open MPI or Gloo (OSPREY_WITH_MPI / OSPREY_WITH_GLOO off) still compiles and
// says what is missing when asked for multi-process work. In a build with both there is nothing
// to check here: the multi-process tests (tests/multi_worker) cover the real backends.
#include <gtest/gtest.h>

#include <string>

#include "osprey/comm/gloo.h"
#include "osprey/comm/mpi.h"
#include "osprey/core/error.h"

namespace osprey::comm {
namespace {

TEST(BackendStubTest, ABuildWithoutMpiSaysSoWhenAskedForAnMpiCommunicator) {
  if (mpi_built()) GTEST_SKIP() << "built with MPI";
  try {
    make_mpi_communicator();
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("osprey was built without MPI: install libopenmpi-dev"), std::string::npos);
  }
  mpi_abort_if_running(1);  // nothing to abort: returns
}

TEST(BackendStubTest, ABuildWithoutGlooSaysSoWhenAskedForAGlooGroup) {
  if (gloo_built()) GTEST_SKIP() << "built with Gloo";
  try {
    GlooGroup group({.rank = 0, .size = 2, .rendezvous = "127.0.0.1:1", .hostname = "", .check_calls = true});
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("osprey was built without Gloo: install libgloo-dev"), std::string::npos);
  }
}

}  // namespace
}  // namespace osprey::comm
