#include "osprey/comm/tcp_store.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "osprey/core/error.h"

namespace osprey::comm {

namespace {

// Wire format, both ways: u8 op (or status), u32 key length, key, u32 value length, value.
enum Op : uint8_t { kHello = 1, kSet, kGet, kCheck, kGone };
enum Status : uint8_t { kOk = 0, kMissing = 1, kBad = 2 };
using Clock = std::chrono::steady_clock;

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list != nullptr) freeaddrinfo(list);
  }
};

void resolve(const std::string& host, int port, bool passive, AddrInfo& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &out.list);
  OSPREY_CHECK_T(DistributedError, rc == 0, "TcpStore: cannot resolve {}:{}: {}", host, port,
                 gai_strerror(rc));
}

void put_u32(std::vector<char>& b, size_t v) {
  const auto u = static_cast<uint32_t>(v);
  const char* p = reinterpret_cast<const char*>(&u);
  b.insert(b.end(), p, p + 4);
}

uint32_t get_u32(const char* p) {
  uint32_t u = 0;
  std::memcpy(&u, p, 4);
  return u;
}

std::vector<char> frame(uint8_t op, const std::string& key, const std::vector<char>& value) {
  std::vector<char> b;
  b.reserve(9 + key.size() + value.size());
  b.push_back(static_cast<char>(op));
  put_u32(b, key.size());
  b.insert(b.end(), key.begin(), key.end());
  put_u32(b, value.size());
  b.insert(b.end(), value.begin(), value.end());
  return b;
}

// A complete frame at the start of buf: its size, 0 when more bytes are needed, -1 when bounds
// are exceeded.
int64_t frame_size(const std::vector<char>& buf) {
  if (buf.size() < 5) return 0;
  const uint32_t klen = get_u32(buf.data() + 1);
  if (klen > kMaxStoreKeyBytes) return -1;
  if (buf.size() < 9 + static_cast<size_t>(klen)) return 0;
  const uint32_t vlen = get_u32(buf.data() + 5 + klen);
  if (vlen > kMaxStoreValueBytes) return -1;
  const size_t total = 9 + static_cast<size_t>(klen) + vlen;
  return buf.size() < total ? 0 : static_cast<int64_t>(total);
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

struct TcpStoreServer::Client {
  int fd = -1;
  int rank = -1;
  std::vector<char> in;
};

TcpStoreServer::TcpStoreServer(const std::string& host, int port) {
  AddrInfo ai;
  resolve(host, port, true, ai);
  int err = 0;
  for (addrinfo* a = ai.list; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      listen_fd_ = fd;
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    } else {
      err = errno;
      ::close(fd);
    }
  }
  OSPREY_CHECK_T(DistributedError, listen_fd_ >= 0, "TcpStore: cannot listen on {}:{}: {}", host,
                 port, std::strerror(err));
  if (::pipe2(wake_, O_CLOEXEC) != 0) {
    ::close(listen_fd_);
    OSPREY_THROW(DistributedError, "TcpStore: pipe2 failed: {}", std::strerror(errno));
  }
  thread_ = std::thread([this] { serve(); });
}

TcpStoreServer::~TcpStoreServer() {
  const char byte = 0;
  (void)!::write(wake_[1], &byte, 1);
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void TcpStoreServer::serve() {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<pollfd> fds;
  for (;;) {
    fds.assign({{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    for (const auto& c : clients) fds.push_back({c->fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;
    if ((fds[1].revents & POLLIN) != 0) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        clients.push_back(std::make_unique<Client>());
        clients.back()->fd = fd;
        ++clients_;
      }
    }
    std::vector<std::unique_ptr<Client>> kept;
    for (size_t i = 0; i < clients.size(); ++i) {
      Client& c = *clients[i];
      bool keep = true;
      // A client accepted in this round has no pollfd yet (fds holds the ones polled).
      if (i + 2 < fds.size() && fds[i + 2].revents != 0) {
        char buf[65536];
        const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
        keep = n > 0 && (c.in.insert(c.in.end(), buf, buf + n), handle(c));
      }
      if (keep) {
        kept.push_back(std::move(clients[i]));
      } else {
        if (c.rank >= 0) gone_.insert(c.rank);
        ::close(c.fd);
        --clients_;
      }
    }
    clients = std::move(kept);
  }
  for (const auto& c : clients) ::close(c->fd);
}

void TcpStoreServer::wait_for_clients(int clients, std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (clients_.load() > clients && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

bool TcpStoreServer::handle(Client& c) {
  for (;;) {
    const int64_t size = frame_size(c.in);
    if (size < 0) return false;  // over the bounds: drop the client
    if (size == 0) return true;
    const uint8_t op = static_cast<uint8_t>(c.in[0]);
    const uint32_t klen = get_u32(c.in.data() + 1);
    const std::string key(c.in.data() + 5, klen);
    const std::vector<char> value(c.in.begin() + 9 + klen, c.in.begin() + size);
    c.in.erase(c.in.begin(), c.in.begin() + size);
    uint8_t status = kOk;
    std::vector<char> reply;
    switch (op) {
      case kHello:
        c.rank = std::atoi(key.c_str());
        connected_.insert(c.rank);
        gone_.erase(c.rank);
        break;
      case kSet:
        data_[key] = value;
        break;
      case kGet:
      case kCheck: {
        const auto it = data_.find(key);
        if (it == data_.end()) {
          status = kMissing;
        } else if (op == kGet) {
          reply = it->second;
        }
        break;
      }
      case kGone: {
        std::string list;
        for (int r : gone_) {
          if (!list.empty()) list += ',';
          list += std::to_string(r);
        }
        reply.assign(list.begin(), list.end());
        break;
      }
      default:
        status = kBad;
    }
    const std::vector<char> out = frame(status, "", reply);
    if (!write_all(c.fd, out.data(), out.size())) return false;
  }
}

TcpStore::TcpStore(std::string host, int port, int rank, std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), rank_(rank), timeout_(timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string last_error = "no address";
  while (fd_ < 0) {
    AddrInfo ai;
    resolve(host_, port_, false, ai);
    for (addrinfo* a = ai.list; a != nullptr && fd_ < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        fd_ = fd;
      } else {
        last_error = std::strerror(errno);
        ::close(fd);
      }
    }
    if (fd_ >= 0) break;
    OSPREY_CHECK_T(DistributedError, Clock::now() < deadline,
                   "TcpStore: rank {} could not reach the rendezvous store of rank 0 at {} within "
                   "{} ms ({}); is the "
                   "chief (rank 0) running at that address?",
                   rank_, address(), timeout.count(), last_error);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  call(kHello, std::to_string(rank_), {}, timeout_);
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

std::pair<uint8_t, std::vector<char>> TcpStore::call(uint8_t op, const std::string& key,
                                                     const std::vector<char>& value,
                                                     std::chrono::milliseconds reply_timeout) {
  OSPREY_CHECK(key.size() <= kMaxStoreKeyBytes, "TcpStore: key of {} bytes exceeds the bound of {}",
               key.size(), kMaxStoreKeyBytes);
  OSPREY_CHECK(value.size() <= kMaxStoreValueBytes,
               "TcpStore: value of {} bytes exceeds the bound of {}", value.size(),
               kMaxStoreValueBytes);
  std::lock_guard<std::mutex> lock(mutex_);
  OSPREY_CHECK_T(DistributedError, !out_of_step_,
                 "TcpStore: rank {} gave up on the rendezvous store at {} after a reply that did "
                 "not come in time",
                 rank_, address());
  const std::vector<char> out = frame(op, key, value);
  OSPREY_CHECK_T(DistributedError, write_all(fd_, out.data(), out.size()),
                 "TcpStore: rank {} lost the rendezvous store of rank 0 at {} ({})", rank_,
                 address(), std::strerror(errno));
  std::vector<char> in;
  const auto deadline = Clock::now() + reply_timeout;
  for (;;) {
    const int64_t size = frame_size(in);
    OSPREY_CHECK_T(DistributedError, size >= 0, "TcpStore: malformed reply from {}", address());
    if (size > 0) {
      const uint32_t klen = get_u32(in.data() + 1);
      return {static_cast<uint8_t>(in[0]),
              std::vector<char>(in.begin() + 9 + klen, in.begin() + size)};
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd_, POLLIN, 0};
    const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    out_of_step_ = ready <= 0;
    OSPREY_CHECK_T(DistributedError, ready > 0,
                   "TcpStore: rank {} got no reply from the rendezvous store at {} "
                   "within {} ms",
                   rank_, address(), reply_timeout.count());
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    OSPREY_CHECK_T(DistributedError, n > 0,
                   "TcpStore: rank {} lost the rendezvous store of rank 0 at {} (the chief "
                   "closed the connection or died)",
                   rank_, address());
    in.insert(in.end(), buf, buf + n);
  }
}

void TcpStore::set(const std::string& key, const std::vector<char>& value) {
  call(kSet, key, value, timeout_);
}

void TcpStore::set(const std::string& key, const std::vector<char>& value,
                   std::chrono::milliseconds reply_timeout) {
  call(kSet, key, value, reply_timeout);
}

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  auto [status, value] = call(kGet, key, {}, timeout_);
  OSPREY_ASSERT(status == kOk, "TcpStore: key {} vanished", key);
  return value;
}

std::optional<std::vector<char>> TcpStore::try_get(const std::string& key,
                                                   std::chrono::milliseconds reply_timeout) {
  auto [status, value] = call(kGet, key, {}, reply_timeout);
  if (status != kOk) return std::nullopt;
  return std::move(value);
}

void TcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto delay = std::chrono::milliseconds(1);
  for (size_t i = 0; i < keys.size();) {
    if (call(kCheck, keys[i], {}, timeout_).first == kOk) {
      ++i;
      continue;
    }
    if (Clock::now() >= deadline) {
      std::string missing;
      for (size_t j = i; j < keys.size(); ++j) missing += (missing.empty() ? "" : ", ") + keys[j];
      OSPREY_THROW(DistributedError,
                   "TcpStore: rank {} waited {} ms at {} for keys that never came: {} (a peer that "
                   "never started or "
                   "died during rendezvous)",
                   rank_, timeout.count(), address(), missing);
    }
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(50));
  }
}

std::string TcpStore::local_address() const {
  sockaddr_storage self{};
  socklen_t len = sizeof self;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&self), &len);
  char host[NI_MAXHOST] = {0};
  getnameinfo(reinterpret_cast<sockaddr*>(&self), len, host, sizeof host, nullptr, 0,
              NI_NUMERICHOST);
  return host;
}

std::vector<int> TcpStore::gone_ranks(std::chrono::milliseconds reply_timeout) {
  const std::vector<char> reply = call(kGone, "", {}, reply_timeout).second;
  std::vector<int> out;
  const std::string s(reply.begin(), reply.end());
  for (size_t b = 0; b < s.size();) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    out.push_back(std::atoi(s.substr(b, e - b).c_str()));
    b = e + 1;
  }
  return out;
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  OSPREY_CHECK_T(Error, fd >= 0, "free_loopback_port: socket failed: {}", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  const int err = errno;
  ::close(fd);
  OSPREY_CHECK_T(Error, ok, "cannot find a free port on 127.0.0.1: {}", std::strerror(err));
  return ntohs(a.sin_port);
}

}  // namespace osprey::comm
