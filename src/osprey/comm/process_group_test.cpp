#include "osprey/comm/process_group.h"

#include <gtest/gtest.h>

#include "osprey/comm/mpi.h"
#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"

namespace osprey::comm {
namespace {

TEST(BackendTest, NamesRoundTripAndABadNameListsTheValidOnesAndWhere) {
  for (Backend b : {Backend::automatic, Backend::mpi, Backend::gloo})
    EXPECT_EQ(parse_backend(to_string(b), "test"), b) << to_string(b);
  EXPECT_EQ(to_string(Backend::automatic), "auto");
  EXPECT_EQ(testing::error_of<ValueError>([] { parse_backend("nccl", "--communication"); }),
            "--communication: communication must be auto, mpi or gloo. Received: 'nccl'");
}

TEST(BackendTest, AutomaticIsGlooOnlyWithARendezvousOutsideMpirun) {
  EXPECT_EQ(resolve_backend(Backend::gloo, false), Backend::gloo);
  EXPECT_EQ(resolve_backend(Backend::mpi, true), Backend::mpi);
  EXPECT_EQ(resolve_backend(Backend::automatic, false), Backend::mpi);
  EXPECT_EQ(resolve_backend(Backend::automatic, true),
            mpi_launched() ? Backend::mpi : Backend::gloo);
}

TEST(ProcessGroupTest, GlooWithoutARendezvousAndABadRankAreRefusedNamingTheCaller) {
  if (mpi_launched()) GTEST_SKIP() << "under mpirun Gloo's rendezvous goes through MPI";
  EXPECT_EQ(testing::error_of<ValueError>([] {
              ProcessGroup::connect(
                  {.backend = Backend::gloo, .rank = 0, .size = 2, .caller = "PipelineParallel"});
            }),
            "PipelineParallel: Gloo needs a rendezvous address, and none was given: set "
            "OSPREY_CONFIG or TF_CONFIG (the chief's host:port) or "
            "OSPREY_GLOO_RENDEZVOUS=host:port, or start the job with mpirun (osprey launch) so "
            "the address goes through MPI");
  EXPECT_EQ(testing::error_of<ValueError>(
                [] { ProcessGroup::connect({.rank = 2, .size = 2, .caller = "ModelParallel"}); }),
            "ModelParallel: rank 2 of 2 is not a rank of the group");
}

}  // namespace
}  // namespace osprey::comm
