// File: include/grpc_resilience/grpc_resilience.h
//
// The whole library: client, server and policies.

#ifndef GRPC_RESILIENCE_GRPC_RESILIENCE_H_
#define GRPC_RESILIENCE_GRPC_RESILIENCE_H_

#include "grpc_resilience/client.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/server.h"

#endif  // GRPC_RESILIENCE_GRPC_RESILIENCE_H_
