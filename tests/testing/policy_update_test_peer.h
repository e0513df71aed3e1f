// The per-method state of a client or a server engine, as the policy update
// tests look at it (the engines befriend this class).

#ifndef GRPC_RESILIENCE_TESTS_TESTING_POLICY_UPDATE_TEST_PEER_H_
#define GRPC_RESILIENCE_TESTS_TESTING_POLICY_UPDATE_TEST_PEER_H_

#include <memory>

#include "src/client_interceptors/client_resilience_impl.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {

class PolicyUpdateTestPeer {
 public:
  static std::shared_ptr<ClientMethodState> ForMethod(ClientResilienceImpl& impl,
                                                      const char* method) {
    return impl.ForMethod(method);
  }
  static std::shared_ptr<ServerMethodState> ForMethod(ServerResilienceImpl& impl,
                                                      const char* method) {
    return impl.ForMethod(method);
  }
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_TESTS_TESTING_POLICY_UPDATE_TEST_PEER_H_
