#include "osprey/comm/tcp_store.h"

#include <gtest/gtest.h>

#include <thread>

#include "osprey/core/error.h"

namespace osprey::comm {
namespace {

using std::chrono::milliseconds;

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST(TcpStoreTest, GetWaitsForAKeyAnotherRankSetsLater) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStore a("127.0.0.1", server.port(), 0, milliseconds(5000));
  std::thread later([&] {
    TcpStore b("127.0.0.1", server.port(), 1, milliseconds(5000));
    std::this_thread::sleep_for(milliseconds(50));
    b.set("addr/1", bytes("hello"));
  });
  EXPECT_EQ(a.get("addr/1"), bytes("hello"));
  later.join();
}

TEST(TcpStoreTest, WaitNamesTheKeysThatNeverCame) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStore a("127.0.0.1", server.port(), 0, milliseconds(5000));
  a.set("x", bytes("1"));
  try {
    a.wait({"x", "y", "z"}, milliseconds(100));
    FAIL() << "no error";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("for keys that never came: y, z"), std::string::npos)
        << e.what();
  }
}

TEST(TcpStoreTest, AClientThatDisconnectsIsReportedGone) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStore a("127.0.0.1", server.port(), 0, milliseconds(5000));
  { TcpStore b("127.0.0.1", server.port(), 3, milliseconds(5000)); }
  std::vector<int> gone;
  for (int i = 0; i < 100 && gone.empty(); ++i) {
    gone = a.gone_ranks();
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(gone, std::vector<int>{3});
}

TEST(TcpStoreTest, NoServerIsAnErrorNamingTheAddress) {
  int port = 0;
  {
    TcpStoreServer probe("127.0.0.1", 0);
    port = probe.port();
  }  // a port nobody listens on now
  try {
    TcpStore a("127.0.0.1", port, 1, milliseconds(200));
    FAIL() << "no error";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "rank 1 could not reach the rendezvous store of rank 0 at 127.0.0.1:" +
                  std::to_string(port)),
              std::string::npos)
        << e.what();
  }
}

TEST(TcpStoreTest, AnOversizedValueIsRefusedBeforeSending) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStore a("127.0.0.1", server.port(), 0, milliseconds(5000));
  EXPECT_THROW(a.set("big", std::vector<char>(kMaxStoreValueBytes + 1)), ValueError);
  a.set("small", bytes("ok"));  // the connection is still good
  EXPECT_EQ(a.get("small"), bytes("ok"));
}

TEST(TcpStoreTest, BindingAnAddressInUseIsAnErrorNamingIt) {
  TcpStoreServer first("127.0.0.1", 0);
  try {
    TcpStoreServer second("127.0.0.1", first.port());
    FAIL() << "no error";
  } catch (const DistributedError& e) {
    EXPECT_NE(
        std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(first.port())),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace osprey::comm
