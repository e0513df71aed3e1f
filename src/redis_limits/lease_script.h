// File: src/redis_limits/lease_script.h
//
// The Lua script that takes one lease from the fleet's bucket in Redis, and
// its reply.

#ifndef GRPC_RESILIENCE_SRC_REDIS_LIMITS_LEASE_SCRIPT_H_
#define GRPC_RESILIENCE_SRC_REDIS_LIMITS_LEASE_SCRIPT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

struct redisReply;

namespace resilience {

// LeaseScript
//
// KEYS[1] is the bucket, a hash {tokens, us}: the tokens left and Redis's
// TIME (microseconds) of the last refill. ARGV: rate per second, burst,
// tokens wanted, and 1 when this server has leased from the key before (so
// a missing key was lost: evicted, flushed, deleted, or Redis restarted
// empty) or 0. The script never trusts the hash:
//   - a missing key is a full bucket (at most one extra burst per lost key);
//   - tokens that are not a number in [0, burst] (NaN, -inf, text) are
//     clamped into it (NaN and text: 0), a key of another type replaced
//     by an empty bucket;
//   - a timestamp ahead of Redis's TIME (its clock stepped back, or a
//     failover to a replica whose clock lags) is taken as now, so the bucket
//     refills from now instead of waiting for the old clock; one far behind
//     refills at most to the burst;
// and reports each repair in its reply. The key has no TTL: under the
// volatile-* eviction policies Redis then never evicts it (an hour-long
// cache beside it would otherwise see the bucket's short-lived key evicted
// first, again and again, each time a full bucket). Unless ARGV[5] is 1
// (a caller key's bucket, throttle.perCaller.global, whose keys come and go
// with the callers): the key then expires a second after the bucket is full
// again, when it is the same as a missing one (which is then not a lost
// key), so that Redis does not keep every caller key ever seen.
//
// Reply: {granted, remaining tokens (text), repairs (Repair bits)}.
struct LeaseScript {
  enum Repair : int64_t {
    kKeyLost = 1,     // missing, though this server had leased from it
    kBadValue = 2,    // tokens or timestamp not a number in range, or not a hash
    kClockBack = 4,   // timestamp ahead of Redis's TIME
  };

  static const char kSource[];

  struct Reply {
    int64_t granted = 0;
    double remaining = 0;
    int64_t repairs = 0;  // Repair bits
  };

  // The script's arguments after EVALSHA/EVAL's script and key count.
  static std::vector<std::string> Args(const std::string& key, double rate, int64_t burst,
                                       int64_t want, bool leased_before,
                                       bool expire_when_full = false);

  // The reply to a request for `want` tokens; an error for anything but the
  // script's reply (an error reply's text, or the type found).
  static absl::StatusOr<Reply> Parse(const redisReply* reply, int64_t want);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_REDIS_LIMITS_LEASE_SCRIPT_H_
