// File: src/policy/field_readers.h
//
// The durations of a policy file, read one way by every part of the loader:
// a table of fields, each checked against its range, then stored.

#ifndef GRPC_RESILIENCE_SRC_POLICY_FIELD_READERS_H_
#define GRPC_RESILIENCE_SRC_POLICY_FIELD_READERS_H_

#include <cstdint>
#include <initializer_list>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "src/policy/method_policy.h"

namespace resilience {

inline absl::Duration ToDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

// The range a duration of the file must be in: [low, high], or (low, high]
// when `low_open`.
struct DurationRange {
  absl::Duration low;
  bool low_open;
  absl::Duration high;
};

// In (0, high].
constexpr DurationRange Positive(absl::Duration high) {
  return {absl::ZeroDuration(), /*low_open=*/true, high};
}

// In [0, high].
constexpr DurationRange NonNegative(absl::Duration high) {
  return {absl::ZeroDuration(), /*low_open=*/false, high};
}

// A rolling window: in [1ms, 1h] (RollingWindow also wants whole
// milliseconds that divide into the buckets; its Validate() says so).
inline constexpr DurationRange kWindowRange = {absl::Milliseconds(1), /*low_open=*/false,
                                               kMaxPolicyInterval};

// One duration field of the file, for ReadDurations().
struct DurationField {
  absl::string_view name;  // its JSON name, after the path given to ReadDurations()
  bool set;                // the file sets it
  const google::protobuf::Duration& value;
  DurationRange range;
  absl::Duration* out;  // where it goes; null: checked only (a field not applied)
};

// ReadDurations()
//
// The one "check, then assign" of the file's durations: each field the
// file sets, in order, is checked against its range and stored in `*out`;
// the first out of range is InvalidArgument "<path>.<name>: must be in
// (0, 1h], got 2h", and the fields after it are left alone. Every duration
// of the file passes here (or through a core class's Validate()) with an
// upper bound (kMaxPolicy*), so no later arithmetic on it can overflow.
absl::Status ReadDurations(absl::string_view path, std::initializer_list<DurationField> fields);

// ReadTokenRate()
//
// A token bucket's ratePerSecond and burst at `path`, when `has_rate`, into
// `*rate_out` and `*burst_out`: a burst needs the rate ("<path>.burst: needs
// ratePerSecond"); without one, one second's calls
// (TokenBucket::DefaultBurst()); TokenBucket::Validate() checks both, its
// message at `path` in JSON names. Neither set: OK, nothing stored.
absl::Status ReadTokenRate(absl::string_view path, bool has_rate, double rate, bool has_burst,
                           int64_t burst, double* rate_out, int64_t* burst_out);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_FIELD_READERS_H_
