// File: bench/loopback_get_rate.h
//
// The throughput measurement the server benches share: Gets per second
// against a server, from 8 closed-loop callers on a channel of their own.

#ifndef GRPC_RESILIENCE_BENCH_LOOPBACK_GET_RATE_H_
#define GRPC_RESILIENCE_BENCH_LOOPBACK_GET_RATE_H_

#include <string>

#include "absl/time/time.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/cache_service/load_generator.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace bench {

// CallsPerSecond()
//
// Gets of 100 keys answered per second over `duration`, whatever their
// status, on a fresh channel (its own subchannel) to `target`.
inline double CallsPerSecond(const std::string& target, absl::Duration duration) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = cache::v1::CacheService::NewStub(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  cache_service::LoadOptions load;
  load.calls = 0;
  load.duration = duration;
  load.concurrency = 8;
  load.get_fraction = 1.0;
  load.key_space = 100;
  cache_service::LoadReport report = cache_service::RunLoad(*stub, load);
  return report.calls / absl::ToDoubleSeconds(report.elapsed);
}

}  // namespace bench

#endif  // GRPC_RESILIENCE_BENCH_LOOPBACK_GET_RATE_H_
