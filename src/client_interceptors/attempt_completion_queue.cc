#include "src/client_interceptors/attempt_completion_queue.h"

namespace resilience {

AttemptCompletionQueue& AttemptCompletionQueue::Global() {
  static AttemptCompletionQueue* const queue = new AttemptCompletionQueue();  // never destroyed
  return *queue;
}

AttemptCompletionQueue::AttemptCompletionQueue() : thread_([this] { Run(); }) {}

void AttemptCompletionQueue::Run() {
  void* tag = nullptr;
  bool ok = false;
  while (cq_.Next(&tag, &ok)) static_cast<Tag*>(tag)->Done(ok);
}

}  // namespace resilience
