#include "src/client_interceptors/reconnect_watch.h"

#include <thread>

#include "grpcpp/completion_queue.h"

namespace resilience {

void ReconnectWatch::Poke(grpc::ChannelInterface* channel) {
  shared_->last_poke_ns.store(absl::ToUnixNanos(shared_->clock->Now()),
                             std::memory_order_relaxed);
  if (shared_->running.load(std::memory_order_acquire)) return;
  auto* grpc_channel = dynamic_cast<grpc::Channel*>(channel);
  if (grpc_channel == nullptr) return;
  // Only a channel that is trying to connect: READY needs nothing, and an
  // IDLE one is left IDLE (a call that reaches gRPC wakes it; our breaker's
  // rejections alone must not connect it).
  const grpc_connectivity_state state = grpc_channel->GetState(/*try_to_connect=*/false);
  if (state != GRPC_CHANNEL_TRANSIENT_FAILURE && state != GRPC_CHANNEL_CONNECTING) return;
  std::shared_ptr<grpc::Channel> keep = grpc_channel->weak_from_this().lock();
  if (keep == nullptr) return;  // not owned by a shared_ptr: cannot be kept alive
  bool idle = false;
  if (!shared_->running.compare_exchange_strong(idle, true, std::memory_order_acq_rel)) return;
  shared_->started.fetch_add(1, std::memory_order_relaxed);
  // A lambda, not Run itself: std::thread's state for a function pointer
  // over our types would be a weak symbol the shared library exports.
  std::thread([shared = shared_, keep = std::move(keep)]() mutable {
    Run(std::move(shared), std::move(keep));
  }).detach();
}

void ReconnectWatch::Hurry(grpc::ChannelInterface* channel) {
  Poke(channel);
  auto* grpc_channel = dynamic_cast<grpc::Channel*>(channel);
  if (grpc_channel == nullptr) return;
  const int64_t now_ns = absl::ToUnixNanos(shared_->clock->Now());
  int64_t last = shared_->last_hurry_ns.load(std::memory_order_relaxed);
  if (last != 0 && now_ns - last < absl::ToInt64Nanoseconds(kHurryEvery)) return;
  if (!shared_->last_hurry_ns.compare_exchange_strong(last, now_ns, std::memory_order_relaxed)) {
    return;  // another caller hurries it now
  }
  shared_->hurried.fetch_add(1, std::memory_order_relaxed);
  grpc::experimental::ChannelResetConnectionBackoff(grpc_channel);
}

void ReconnectWatch::Run(std::shared_ptr<Shared> shared, std::shared_ptr<grpc::Channel> channel) {
  grpc::CompletionQueue cq;
  // Ends once the channel is READY or shut down, or nobody poked for kIdle:
  // each turn waits at most kTurn.
  for (;;) {
    const grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY || state == GRPC_CHANNEL_SHUTDOWN) break;
    // Idleness on the monotonic clock; the watch's deadline is wall time.
    const absl::Time last_poke =
        absl::FromUnixNanos(shared->last_poke_ns.load(std::memory_order_relaxed));
    if (shared->clock->Now() - last_poke > kIdle) break;
    // Polling `cq` for this watch is what moves the reconnection on.
    channel->NotifyOnStateChange(state, absl::ToChronoTime(shared->clock->WallNow() + kTurn),
                                 &cq, &cq);
    void* tag = nullptr;
    bool changed = false;
    if (!cq.Next(&tag, &changed)) break;  // never: the queue is shut down below
  }
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
  shared->running.store(false, std::memory_order_release);
  // `channel` goes last: this may be its last reference.
}

}  // namespace resilience
