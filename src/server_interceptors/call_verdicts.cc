#include "src/server_interceptors/call_verdicts.h"

#include <cstdint>
#include <utility>

namespace resilience {

CallVerdicts::Shard& CallVerdicts::ShardOf(const void* call) const {
  // Contexts are heap objects: the low bits carry no information.
  const uintptr_t bits = reinterpret_cast<uintptr_t>(call);
  return shards_[(bits >> 6 ^ bits >> 12) % shards_.size()];
}

void CallVerdicts::Put(const void* call, Verdict verdict) {
  Shard& shard = ShardOf(call);
  MutexLock lock(&shard.mu);
  auto [it, inserted] = shard.calls.try_emplace(call, std::move(verdict));
  if (inserted) {
    size_.fetch_add(1, std::memory_order_release);
  } else if (it->second.kind != Verdict::kReject) {
    it->second = std::move(verdict);  // a rejection wins over a hold
  }
}

void CallVerdicts::RejectOnArrival(const void* c_call, int code,
                                   std::string message, std::string pushback_ms,
                                   std::optional<std::string> load_report) {
  Verdict verdict;
  verdict.kind = Verdict::kReject;
  verdict.answer = true;
  verdict.code = code;
  verdict.message = std::move(message);
  verdict.pushback_ms = std::move(pushback_ms);
  verdict.load_report = std::move(load_report);
  Put(c_call, std::move(verdict));
}

bool CallVerdicts::AnsweredOnArrival(const void* c_call) const {
  if (c_call == nullptr || size_.load(std::memory_order_acquire) == 0) return false;
  Shard& shard = ShardOf(c_call);
  MutexLock lock(&shard.mu);
  auto it = shard.calls.find(c_call);
  return it != shard.calls.end() && it->second.answer;
}

void CallVerdicts::Reject(const void* call) {
  Verdict verdict;
  verdict.kind = Verdict::kReject;
  Put(call, verdict);
}

void CallVerdicts::Hold(const void* call, absl::Time until,
                        std::atomic<int64_t>* ended_while_held) {
  Verdict verdict;
  verdict.kind = Verdict::kHold;
  verdict.hold_until = until;
  verdict.ended_while_held = ended_while_held;
  Put(call, verdict);
}

bool CallVerdicts::IsRejected(const void* call) const {
  if (size_.load(std::memory_order_acquire) == 0) return false;
  Shard& shard = ShardOf(call);
  MutexLock lock(&shard.mu);
  auto it = shard.calls.find(call);
  return it != shard.calls.end() && it->second.kind == Verdict::kReject;
}

Verdict CallVerdicts::Take(const void* call) {
  // A verdict on this very call was put before, on the same call's
  // interceptor path, so the acquire load sees it.
  if (size_.load(std::memory_order_acquire) == 0) return Verdict();
  Shard& shard = ShardOf(call);
  MutexLock lock(&shard.mu);
  auto it = shard.calls.find(call);
  if (it == shard.calls.end()) return Verdict();
  Verdict verdict = std::move(it->second);
  shard.calls.erase(it);
  size_.fetch_sub(1, std::memory_order_release);
  return verdict;
}

HoldEnd CallVerdicts::EndOfHold(absl::Time now, absl::Time hold_until, absl::Time deadline,
                                bool cancelled) const {
  if (now >= deadline) return HoldEnd::kDeadlinePassed;
  if (now >= hold_until) return HoldEnd::kElapsed;
  if (now >= holds_end()) return HoldEnd::kHoldsEnded;
  if (cancelled) return HoldEnd::kCancelled;
  return HoldEnd::kHeld;
}

}  // namespace resilience
