#include "controller/sim/traffic_record.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace pilotlight::sim {

namespace {

int64_t SecondOf(absl::Time t) { return absl::ToUnixSeconds(t); }

int SizeBucket(uint32_t tokens) {
  return tokens < 2 ? 0
                    : std::min(TrafficRecord::kSizeBuckets - 1,
                               static_cast<int>(std::bit_width(tokens)) - 1);
}

// The middle of a bucket.
double Middle(int b) { return b == 0 ? 1 : std::ldexp(1.5, b); }

// The size at quantile q of a histogram: the middle of its bucket, times
// `scale`.
uint32_t SizeAt(const TrafficRecord::SizeHistogram& h, double q, double scale) {
  uint64_t total = 0;
  for (uint32_t n : h) {
    total += n;
  }
  if (total == 0) {
    return 0;
  }
  const double want = q * static_cast<double>(total);
  double seen = 0;
  for (int b = 0; b < TrafficRecord::kSizeBuckets; ++b) {
    seen += h[static_cast<size_t>(b)];
    if (seen > want) {
      return static_cast<uint32_t>(
          std::max(1L, std::lround(Middle(b) * scale)));
    }
  }
  return static_cast<uint32_t>(
      std::lround(Middle(TrafficRecord::kSizeBuckets - 1) * scale));
}

// What makes the buckets' middles average to the sizes' recorded mean (the
// middle overstates sizes at a bucket's low end by up to half: a trace of
// 1,024-token prompts would replay as 1,536).
double MeanScale(const TrafficRecord::SizeHistogram& h, uint64_t sum) {
  double middles = 0;
  for (int b = 0; b < TrafficRecord::kSizeBuckets; ++b) {
    middles += h[static_cast<size_t>(b)] * Middle(b);
  }
  return middles > 0 && sum > 0 ? static_cast<double>(sum) / middles : 1.0;
}

}  // namespace

// --- the byte ring -------------------------------------------------------

void TrafficRecord::Ring::Grow(size_t cap) {
  std::vector<uint8_t> next(cap);
  for (size_t i = 0; i < size_; ++i) {
    next[i] = at(i);
  }
  buf_ = std::move(next);
  head_ = 0;
}

bool TrafficRecord::Ring::Push(uint8_t b, size_t max_cap) {
  if (size_ == buf_.size()) {
    if (buf_.size() >= max_cap) {
      return false;
    }
    Grow(std::min(max_cap, std::max<size_t>(64, 2 * buf_.size())));
  }
  buf_[(head_ + size_) % buf_.size()] = b;
  ++size_;
  return true;
}

void TrafficRecord::Ring::PopFront(size_t n) {
  head_ = (head_ + n) % std::max<size_t>(1, buf_.size());
  size_ -= n;
}

void TrafficRecord::Ring::Clear() {
  buf_.clear();
  buf_.shrink_to_fit();
  head_ = 0;
  size_ = 0;
}

// A varint at offset i: its value, and the offset after it.
std::pair<uint64_t, size_t> TrafficRecord::Ring::Varint(size_t i) const {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = at(i++);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      return {v, i};
    }
  }
}

// --- the record ------------------------------------------------------------

void TrafficRecord::Observe(absl::Time now) { (void)Look(now); }

bool TrafficRecord::Look(absl::Time now) {
  bool restarted = false;
  if (last_look_ == absl::InfinitePast()) {
    covered_since_ = now;
    restarted = true;
  } else if (now < last_look_) {
    ++clock_jumps_;
    Clear();
    covered_since_ = now;
    restarted = true;
  } else if (now - last_look_ > options_.max_look_gap) {
    ++gaps_;
    covered_since_ = now;
    restarted = true;
  }
  last_look_ = now;
  // Past the window.
  const absl::Time keep_from = now - options_.window;
  EvictBefore(SecondOf(keep_from));
  covered_since_ = std::max(covered_since_, keep_from);
  return restarted;
}

void TrafficRecord::Add(absl::Time now, int64_t arrivals) {
  const absl::Time previous = last_look_;
  // What a look after a gap reports came while nobody looked: it has no
  // time of its own, and is left out rather than put in one second.
  if (Look(now) || arrivals <= 0) {
    return;
  }
  // Spread evenly over the seconds since the previous look (a tick's count
  // put in one second would make the replay burstier than the traffic).
  const int64_t last = SecondOf(now);
  const int64_t first = previous == absl::InfinitePast()
                            ? last
                            : std::min(last, SecondOf(previous) + 1);
  const int64_t seconds = last - first + 1;
  for (int64_t k = 0; k < seconds; ++k) {
    const int64_t n = arrivals * (k + 1) / seconds - arrivals * k / seconds;
    if (n > 0) {
      Put(first + k, n);
    }
  }
}

void TrafficRecord::AddRequest(absl::Time at, uint32_t input_tokens,
                               uint32_t output_tokens) {
  if (at < covered_since_ && covered_since_ != absl::InfinitePast()) {
    return;  // before a restart
  }
  AddSize(input_tokens, output_tokens);
  Put(SecondOf(at), 1);
}

void TrafficRecord::AddSize(uint32_t input_tokens, uint32_t output_tokens) {
  ++input_[static_cast<size_t>(SizeBucket(input_tokens))];
  ++output_[static_cast<size_t>(SizeBucket(output_tokens))];
  input_sum_ += input_tokens;
  output_sum_ += output_tokens;
}

bool TrafficRecord::has_sizes() const {
  return std::any_of(input_.begin(), input_.end(),
                     [](uint32_t n) { return n > 0; });
}

int64_t TrafficRecord::CoveredArrivals() const {
  if (covered_since_ == absl::InfinitePast()) {
    return 0;
  }
  return ArrivalsBetween(covered_since_,
                         covered_since_ + Covered() + absl::Seconds(1));
}

absl::Duration TrafficRecord::Covered() const {
  if (last_look_ == absl::InfinitePast()) {
    return absl::ZeroDuration();
  }
  return last_look_ - covered_since_;
}

int64_t TrafficRecord::bytes() const {
  return static_cast<int64_t>(sizeof(*this) + ring_.capacity());
}

void TrafficRecord::Append(uint64_t v) {
  do {
    uint8_t b = static_cast<uint8_t>(v & 0x7f);
    v >>= 7;
    if (v != 0) {
      b |= 0x80;
    }
    while (!ring_.Push(b, MaxRing())) {
      EvictOldest();
    }
  } while (v != 0);
}

size_t TrafficRecord::MaxRing() const {
  return static_cast<size_t>(std::max<int64_t>(
      64, options_.max_bytes - static_cast<int64_t>(sizeof(*this))));
}

void TrafficRecord::Put(int64_t second, int64_t count) {
  arrivals_ += count;
  if (entries_ > 0 && second <= last_second_) {
    // The last entry's second (or, out of order, folded into it): its
    // coding is written again with the new count.
    ring_.Truncate(ring_.size() - last_len_);
    last_count_ += count;
  } else {
    if (entries_ == 0) {
      base_second_ = second;  // the first entry's gap is 0
    }
    last_gap_ = second - (entries_ > 0 ? last_second_ : base_second_);
    last_second_ = second;
    last_count_ = count;
    ++entries_;
  }
  const size_t before = ring_.size();
  Append(static_cast<uint64_t>(last_gap_));
  Append(static_cast<uint64_t>(last_count_));
  last_len_ = ring_.size() - before;
}

void TrafficRecord::EvictOldest() {
  // The first entry goes; history before the next one is lost.
  const auto [gap, after_gap] = ring_.Varint(0);
  const auto [count, after] = ring_.Varint(after_gap);
  base_second_ += static_cast<int64_t>(gap);
  arrivals_ -= static_cast<int64_t>(count);
  ring_.PopFront(after);
  --entries_;
  covered_since_ =
      std::max(covered_since_, absl::FromUnixSeconds(base_second_ + 1));
  if (entries_ == 0) {
    last_len_ = 0;
  }
}

void TrafficRecord::EvictBefore(int64_t second) {
  while (entries_ > 0) {
    const auto [gap, unused] = ring_.Varint(0);
    if (base_second_ + static_cast<int64_t>(gap) >= second) {
      return;
    }
    EvictOldest();
  }
}

void TrafficRecord::Clear() {
  ring_.Clear();
  entries_ = 0;
  arrivals_ = 0;
  last_len_ = 0;
  input_ = {};
  output_ = {};
  input_sum_ = 0;
  output_sum_ = 0;
}

template <typename Fn>
void TrafficRecord::ForEachSecond(Fn fn) const {
  int64_t second = base_second_;
  size_t i = 0;
  for (int64_t e = 0; e < entries_; ++e) {
    const auto [gap, after_gap] = ring_.Varint(i);
    const auto [count, after] = ring_.Varint(after_gap);
    second += static_cast<int64_t>(gap);
    fn(second, static_cast<int64_t>(count));
    i = after;
  }
}

int64_t TrafficRecord::ArrivalsBetween(absl::Time from, absl::Time to) const {
  int64_t n = 0;
  const int64_t lo = SecondOf(from);
  const int64_t hi = SecondOf(to);
  ForEachSecond(
      [&](int64_t s, int64_t count) { n += s >= lo && s < hi ? count : 0; });
  return n;
}

EndpointTrace TrafficRecord::Replay(absl::Time from, absl::Time to,
                                    const std::string& name) const {
  EndpointTrace t;
  t.name = name;
  const int64_t lo = SecondOf(from);
  const int64_t hi = SecondOf(to);
  const double start = absl::ToDoubleSeconds(from - absl::UnixEpoch());
  // The golden ratio's fractional part walks the prompt sizes' quantiles
  // evenly, and sqrt(2)'s the outputs' apart from it: the histograms hold
  // no pairing, and one walk would give the longest prompts the longest
  // outputs (a heavier load than the traffic's).
  constexpr double kStep = 0.6180339887498949;
  constexpr double kOutputStep = 0.4142135623730951;
  double q = 0.5;
  double q_out = 0.25;
  const double in_scale = MeanScale(input_, input_sum_);
  const double out_scale = MeanScale(output_, output_sum_);
  ForEachSecond([&](int64_t s, int64_t count) {
    if (s < lo || s >= hi) {
      return;
    }
    for (int64_t k = 0; k < count; ++k) {
      Request r;
      r.arrival_s = std::max(
          0.0, static_cast<double>(s) - start +
                   (static_cast<double>(k) + 0.5) / static_cast<double>(count));
      r.input_tokens = SizeAt(input_, q, in_scale);
      r.output_tokens = SizeAt(output_, q_out, out_scale);
      q = std::fmod(q + kStep, 1.0);
      q_out = std::fmod(q_out + kOutputStep, 1.0);
      t.requests.push_back(r);
    }
  });
  return t;
}

void ReplicaHistory::Record(absl::Time now, std::vector<int> ready) {
  if (!entries_.empty() && (entries_.back().second == ready ||
                            now - entries_.back().first < absl::Minutes(1))) {
    return;
  }
  entries_.emplace_back(now, std::move(ready));
  // Keep the last entry at or before the longest window's start.
  const absl::Time oldest = now - TrafficRecordOptions{}.window;
  while (entries_.size() >= 2 && entries_[1].first <= oldest) {
    entries_.pop_front();
  }
}

std::vector<int> ReplicaHistory::At(absl::Time t) const {
  std::vector<int> at;
  for (const auto& [when, ready] : entries_) {
    if (when > t) {
      break;
    }
    at = ready;
  }
  return at;
}

}  // namespace pilotlight::sim
