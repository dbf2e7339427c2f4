#include "osprey/comm/deadline.h"

#include <gtest/gtest.h>

#include <vector>

namespace osprey::comm {
namespace {

using std::chrono::milliseconds;
using Kind = PeerState::Kind;

TEST(DeadlineTest, GraceIsHalfTheTimeoutBetweenOneAndFifteenSeconds) {
  EXPECT_EQ(liveness_grace(milliseconds(500)), milliseconds(1000));
  EXPECT_EQ(liveness_grace(milliseconds(6000)), milliseconds(3000));
  EXPECT_EQ(liveness_grace(std::chrono::minutes(5)), milliseconds(15000));
}

TEST(DeadlineTest, NamesTheSilentPeerAndWhereTheOthersWait) {
  const std::string where = describe_call("all_reduce", "layers", 57);
  EXPECT_EQ(where, "all_reduce on 'layers' (call 57)");
  const std::vector<PeerState> peers = {
      {}, {Kind::waiting, where}, {Kind::silent, ""}, {Kind::waiting, where}};
  EXPECT_EQ(describe_failure("MPI", where, 0, milliseconds(4000), peers),
            "MPI all_reduce on 'layers' (call 57) passed its deadline of 4000 ms on rank 0 of 4: "
            "rank 2 did not respond within 2000 ms (stopped, hung, or busy outside any "
            "collective); rank 1 is waiting in all_reduce on 'layers' (call 57); rank 3 is "
            "waiting in all_reduce on 'layers' (call 57)");
}

TEST(DeadlineTest, NamesEveryDeadAndSilentPeer) {
  const std::vector<PeerState> peers = {
      {Kind::gone, ""}, {Kind::silent, ""}, {}, {Kind::gone, ""}, {Kind::silent, ""}};
  EXPECT_EQ(describe_failure("Gloo", "broadcast on 'outputs' (call 3)", 2, milliseconds(2000),
                             peers, false),
            "Gloo broadcast on 'outputs' (call 3) failed on rank 2 of 5: ranks 0 and 3 died or "
            "left the job; ranks 1 and 4 did not respond within 1000 ms (stopped, hung, or busy "
            "outside any collective)");
}

TEST(DeadlineTest, APeerInAnotherCallOfTheSameCommunicatorMeansTheProgramsDiverged) {
  const std::vector<PeerState> peers = {{Kind::waiting, "barrier on 'world' (call 9)"},
                                        {},
                                        {Kind::waiting, "all_gather on 'world' (call 9)"}};
  EXPECT_EQ(describe_failure("MPI", "all_gather on 'world' (call 9)", 1, milliseconds(1000), peers),
            "MPI all_gather on 'world' (call 9) passed its deadline of 1000 ms on rank 1 of 3: "
            "rank 0 called something else on this communicator (the ranks' programs diverged); "
            "rank 0 is waiting in barrier on 'world' (call 9); rank 2 is waiting in all_gather on "
            "'world' (call 9)");
}

TEST(DeadlineTest, PeersWaitingOnAnotherCommunicatorAreNotADivergence) {
  const std::vector<PeerState> peers = {{}, {Kind::waiting, "all_reduce on 'gradients' (call 4)"}};
  EXPECT_EQ(
      describe_failure("MPI", "all_gather on 'outputs' (call 2)", 0, milliseconds(1000), peers),
      "MPI all_gather on 'outputs' (call 2) passed its deadline of 1000 ms on rank 0 of 2: "
      "every peer is alive and waiting on another communicator; rank 1 is waiting in "
      "all_reduce on 'gradients' (call 4)");
}

}  // namespace
}  // namespace osprey::comm
