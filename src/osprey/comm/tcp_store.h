// TcpStore: the key-value store Gloo's rendezvous needs (set, get, wait), served over TCP by rank
// 0 at the chief's address from the cluster spec, so processes started host by host (TF_CONFIG)
// can find each other. Gloo ships file, hash and Redis stores only; a file store needs a shared
// file system and Redis a server the user would have to run, hence these ~300 lines (PyTorch's
// c10d TCPStore plays the same part). It also knows which ranks are alive: each client says its
// rank on connect, and a connection that closes marks that rank as gone, so a rank whose
// collective fails can name the peer that died. Messages are bounded (keys 4 KiB, values 16 MiB).
//   TcpStoreServer server("127.0.0.1", 29500);         // on rank 0
//   TcpStore store("127.0.0.1", 29500, rank, 60s);     // on every rank
//   store.set("addr/1", bytes);  auto v = store.get("addr/0");   // get waits for the key
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace osprey::comm {

// A port nothing listens on now: the kernel's pick for an ephemeral bind on 127.0.0.1. For
// addresses a cluster spec must name before their servers start (osprey launch, tests, fuzz
// harnesses); another process may take it in between, as with any such probe. Error when no
// socket can be bound.
int free_loopback_port();

inline constexpr size_t kMaxStoreKeyBytes = 4096;
inline constexpr size_t kMaxStoreValueBytes = size_t{16} << 20;

class TcpStoreServer {
 public:
  // Listens on host:port (port 0: an ephemeral port, see port()); DistributedError naming the
  // address when it cannot bind.
  TcpStoreServer(const std::string& host, int port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;
  int port() const noexcept { return port_; }
  // Waits until at most `clients` connections remain, or `timeout` passes. Rank 0 calls it before
  // it stops serving after a failure, so the others can still ask the store which rank left.
  void wait_for_clients(int clients, std::chrono::milliseconds timeout) const;

 private:
  struct Client;
  void serve();
  // Handles every complete request in the client's buffer; false when the client must be dropped.
  bool handle(Client& c);

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe that ends serve() from the destructor
  int port_ = 0;
  std::map<std::string, std::vector<char>> data_;
  std::set<int> connected_, gone_;  // ranks that said hello, and those whose connection closed
  std::atomic<int> clients_{0};     // open connections (read by wait_for_clients)
  std::thread thread_;
};

class TcpStore {
 public:
  // Connects to the server, retrying until `timeout` (rank 0 may start later than the others),
  // and announces `rank`. DistributedError naming the address when it cannot.
  TcpStore(std::string host, int port, int rank, std::chrono::milliseconds timeout);
  ~TcpStore();
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::vector<char>& value);
  // Waits for the key (up to the timeout), then returns its value.
  std::vector<char> get(const std::string& key);
  // A failure's survey (deadline.h) must not wait the whole timeout on a stopped rank 0: these
  // wait at most `reply_timeout` for the server's answer. try_get returns nullopt for a missing
  // key without waiting for it.
  void set(const std::string& key, const std::vector<char>& value,
           std::chrono::milliseconds reply_timeout);
  std::optional<std::vector<char>> try_get(const std::string& key,
                                           std::chrono::milliseconds reply_timeout);
  // Waits until every key is set; DistributedError naming the missing keys after `timeout`.
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  // Ranks that connected and have since disconnected (died, or finished), ascending.
  std::vector<int> gone_ranks() { return gone_ranks(timeout_); }
  std::vector<int> gone_ranks(std::chrono::milliseconds reply_timeout);
  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  // This end's IP address on the connection to the server: the interface that reaches rank 0.
  std::string local_address() const;

 private:
  // One request, one reply; the reply's status byte and payload.
  std::pair<uint8_t, std::vector<char>> call(uint8_t op, const std::string& key,
                                             const std::vector<char>& value,
                                             std::chrono::milliseconds reply_timeout);

  std::string host_;
  int port_;
  int rank_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;  // one request at a time on the connection
  int fd_ = -1;
  // A reply that did not come in time may still come: the connection's replies no longer match
  // its requests, and every later call fails.
  bool out_of_step_ = false;
};

}  // namespace osprey::comm
