#include "controller/http/client_watch.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/http/socket_name.h"

namespace pilotlight::http {
namespace {

// Not matched to a socket by the scan after its first try: not polled,
// and not looked for again (its addresses are not of a socket of ours).
constexpr int kUnmatched = -2;
// Fired: never polled again.
constexpr int kFired = -3;

// "remote host|remote port|local port": one TCP connection of this
// process, written as cpp-httplib writes a request's addresses.
std::string Key(const std::string& remote_addr, int remote_port,
                int local_port) {
  return absl::StrCat(remote_addr, "|", remote_port, "|", local_port);
}

// Every connected IP socket of this process, by Key.
std::map<std::string, int> ScanSockets() {
  std::map<std::string, int> out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) {
    return out;
  }
  const int own = ::dirfd(dir);
  while (const dirent* d = ::readdir(dir)) {
    int fd = -1;
    if (!absl::SimpleAtoi(d->d_name, &fd) || fd == own) {
      continue;
    }
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof(peer);
    sockaddr_storage local{};
    socklen_t local_len = sizeof(local);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) !=
            0) {
      continue;  // not a socket, or not connected
    }
    const int remote_port = SocketPort(peer);
    const int local_port = SocketPort(local);
    std::string remote_host;
    if (remote_port >= 0 && local_port >= 0 &&
        SocketHost(peer, peer_len, remote_host)) {
      out.emplace(Key(remote_host, remote_port, local_port), fd);
    }
  }
  ::closedir(dir);
  return out;
}

}  // namespace

ClientWatch::ClientWatch(absl::Duration period) : period_(period) {}

ClientWatch::~ClientWatch() { Stop(); }

ClientWatch::Registration::~Registration() { watch_->Unregister(id_); }

std::unique_ptr<ClientWatch::Registration> ClientWatch::Watch(
    const ConnectionId& conn, std::function<void()> on_gone) {
  const std::lock_guard<std::mutex> lock(mu_);
  const int64_t id = next_id_++;
  entries_[id] = Entry{conn, std::move(on_gone), absl::Now()};
  return std::unique_ptr<Registration>(new Registration(this, id));
}

std::unique_ptr<ClientWatch::Registration> ClientWatch::WatchSocket(
    int socket, std::function<void()> on_gone) {
  const std::lock_guard<std::mutex> lock(mu_);
  const int64_t id = next_id_++;
  entries_[id] = Entry{{}, std::move(on_gone), absl::Now(), socket};
  return std::unique_ptr<Registration>(new Registration(this, id));
}

void ClientWatch::Unregister(int64_t id) {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return firing_ != id; });
  entries_.erase(id);
}

int ClientWatch::watched() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(entries_.size());
}

void ClientWatch::Start() {
  const std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) {
    return;
  }
  stop_ = false;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> held(mu_);
    while (!stop_) {
      wake_.wait_for(held, absl::ToChronoMilliseconds(period_));
      if (stop_) {
        break;
      }
      held.unlock();
      Pass(/*match_young=*/false);
      held.lock();
    }
  });
}

void ClientWatch::Stop() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void ClientWatch::Pass(bool match_young) {
  const absl::Time now = absl::Now();
  const auto due = [&](const Entry& e) {
    return e.fd == -1 && (match_young || now - e.since >= period_);
  };
  bool unmatched = false;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, e] : entries_) {
      unmatched = unmatched || due(e);
    }
  }
  if (unmatched) {
    // The scan runs unlocked; a registration it matches is alive, and its
    // socket stays open while it is.
    const std::map<std::string, int> sockets = ScanSockets();
    const std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, e] : entries_) {
      if (due(e)) {
        const auto it = sockets.find(
            Key(e.conn.remote_addr, e.conn.remote_port, e.conn.local_port));
        e.fd = it == sockets.end() ? kUnmatched : it->second;
      }
    }
  }
  std::vector<pollfd> fds;
  std::vector<int64_t> ids;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, e] : entries_) {
      if (e.fd >= 0) {
        fds.push_back(pollfd{e.fd, POLLRDHUP, 0});
        ids.push_back(id);
      }
    }
  }
  if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) {
    return;
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) {
      continue;
    }
    std::function<void()> on_gone;
    {
      const std::lock_guard<std::mutex> lock(mu_);
      // Unregistered meanwhile (its descriptor may be another's now): skip.
      const auto it = entries_.find(ids[i]);
      if (it == entries_.end() || it->second.fd != fds[i].fd) {
        continue;
      }
      it->second.fd = kFired;
      on_gone = std::move(it->second.on_gone);
      firing_ = ids[i];
    }
    if (on_gone) {
      on_gone();
    }
    {
      const std::lock_guard<std::mutex> lock(mu_);
      firing_ = -1;
    }
    idle_.notify_all();
  }
}

}  // namespace pilotlight::http
