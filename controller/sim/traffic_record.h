// TrafficRecord: one endpoint's recent arrivals and request sizes, in
// bounded memory, for replaying its own traffic through candidate policies
// (the re-tuner's input; tests/bench/traffic_record_bench.cc measures it).
//
// Arrivals are kept per second: each second that saw any is one entry,
// coded as two varints (the seconds since the previous such second, the
// count), so a sparse endpoint costs a few bytes a request and a busy one
// about two bytes a second. The record keeps `window` of history, and at
// most `max_bytes`: past that the oldest seconds go first, so a busy
// endpoint keeps hours rather than a day. Request sizes are two log-scale
// histograms (prompt and output tokens).
//
// The record also knows what it did not see: it is told each time the
// caller looked (Observe), so a stretch nobody looked at -- the controller
// down, a leader change, the activator gone -- is a gap, not a quiet
// spell, and a clock that runs backwards restarts the record. Covered()
// says how much unbroken history backs a choice.
//
// Pure: every time is passed in. Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "controller/sim/trace.h"

namespace pilotlight::sim {

struct TrafficRecordOptions {
  absl::Duration window = absl::Hours(24);
  int64_t max_bytes = 48 << 10;
  // Two looks further apart than this leave a gap between them.
  absl::Duration max_look_gap = absl::Seconds(30);
};

class TrafficRecord {
 public:
  explicit TrafficRecord(TrafficRecordOptions options = {})
      : options_(options) {}

  // `arrivals` requests came since the last look, the last of them at or
  // before `now` (the caller's look; a count from the activator or
  // Prometheus is spread evenly over the seconds since the last look, up
  // to the second of `now`). Also a look: Observe(now).
  void Add(absl::Time now, int64_t arrivals);
  // One request, at its own time (the simulator; an activator's log).
  void AddRequest(absl::Time at, uint32_t input_tokens, uint32_t output_tokens);
  // One request's size alone (the engines' token histograms count them at
  // completion, apart from the arrivals).
  void AddSize(uint32_t input_tokens, uint32_t output_tokens);
  // Whether any size was recorded.
  bool has_sizes() const;
  // The caller looked at `now` and saw what it was told (nothing, if no Add
  // came with it). A look after more than max_look_gap starts the coverage
  // afresh; one before the previous look (a clock jump back) also clears
  // the arrivals.
  void Observe(absl::Time now);

  // The start of the unbroken history up to the last look: no gap in it,
  // none of it evicted. InfinitePast before any look.
  absl::Time covered_since() const { return covered_since_; }
  // How long that history is, up to the last look.
  absl::Duration Covered() const;
  absl::Time last_look() const { return last_look_; }
  // Looks that went back in time, and gaps, since the record began.
  int clock_jumps() const { return clock_jumps_; }
  int gaps() const { return gaps_; }

  int64_t arrivals() const { return arrivals_; }  // in the record now
  // The arrivals in [from, to), by the seconds they were put in.
  int64_t ArrivalsBetween(absl::Time from, absl::Time to) const;
  // Those in the unbroken history, to the last look's second (the record
  // keeps older ones, from before a gap).
  int64_t CoveredArrivals() const;
  // Bytes the record holds (its arrivals' coding and histograms).
  int64_t bytes() const;

  // The recorded arrivals in [from, to) as a trace, arrival_s from `from`:
  // a second's n arrivals at its (k + 0.5) / n, sizes drawn in turn from
  // the histograms' quantiles, scaled so their mean is the recorded sizes'
  // mean (the same trace every call).
  EndpointTrace Replay(absl::Time from, absl::Time to,
                       const std::string& name) const;

  // The size histograms: bucket b holds sizes in [2^b, 2^(b+1)) (0 and 1
  // in bucket 0).
  static constexpr int kSizeBuckets = 24;
  using SizeHistogram = std::array<uint32_t, kSizeBuckets>;
  const SizeHistogram& input_tokens() const { return input_; }
  const SizeHistogram& output_tokens() const { return output_; }

 private:
  // A ring of bytes that grows by doubling up to a cap.
  class Ring {
   public:
    size_t size() const { return size_; }
    size_t capacity() const { return buf_.capacity(); }
    uint8_t at(size_t i) const { return buf_[(head_ + i) % buf_.size()]; }
    // False when full at `max_cap`.
    bool Push(uint8_t b, size_t max_cap);
    void PopFront(size_t n);
    void Truncate(size_t n) { size_ = n; }
    void Clear();
    std::pair<uint64_t, size_t> Varint(size_t i) const;

   private:
    void Grow(size_t cap);
    std::vector<uint8_t> buf_;
    size_t head_ = 0;
    size_t size_ = 0;
  };

  // A look at `now`; true when it starts the coverage afresh.
  bool Look(absl::Time now);
  void Put(int64_t second, int64_t count);
  void Append(uint64_t v);
  size_t MaxRing() const;
  void EvictOldest();
  void EvictBefore(int64_t second);
  void Clear();
  template <typename Fn>
  void ForEachSecond(Fn fn) const;

  TrafficRecordOptions options_;
  // Varint pairs (seconds since the previous entry, count), oldest first;
  // the first entry's gap counts from base_second_.
  Ring ring_;
  int64_t base_second_ = 0;
  int64_t last_second_ = 0;  // the last entry's
  int64_t last_gap_ = 0;     // its gap
  int64_t last_count_ = 0;   // its count, still growing
  size_t last_len_ = 0;      // its coding's length
  int64_t entries_ = 0;
  int64_t arrivals_ = 0;
  SizeHistogram input_{};
  SizeHistogram output_{};
  // The sizes' sums, as the engines' histograms export them (_sum).
  uint64_t input_sum_ = 0;
  uint64_t output_sum_ = 0;
  absl::Time covered_since_ = absl::InfinitePast();
  absl::Time last_look_ = absl::InfinitePast();
  int clock_jumps_ = 0;
  int gaps_ = 0;
};

// The Ready replicas per variant as they changed, at most one entry a
// minute, over a record's window: a replay of the record's past starts
// from those the endpoint had when that past began. Pure.
class ReplicaHistory {
 public:
  void Record(absl::Time now, std::vector<int> ready);
  // The replicas at `t` (none before the first entry).
  std::vector<int> At(absl::Time t) const;

 private:
  std::deque<std::pair<absl::Time, std::vector<int>>> entries_;
};

}  // namespace pilotlight::sim
