// File: src/client_interceptors/channel_args.h
//
// StringArg(), IntArg(): the last value of a key in a grpc::ChannelArguments
// (gRPC takes the last one too), if it is of the type asked for; read by
// CreateResilientChannel() and the EndpointRouter's per-address channels.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CHANNEL_ARGS_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CHANNEL_ARGS_H_

#include <cstring>
#include <optional>
#include <string>

#include "grpcpp/support/channel_arguments.h"

namespace resilience {

inline std::optional<std::string> StringArg(const grpc::ChannelArguments& args, const char* key) {
  std::optional<std::string> value;
  const grpc_channel_args c = args.c_channel_args();
  for (size_t i = 0; i < c.num_args; ++i) {
    if (c.args[i].type == GRPC_ARG_STRING && std::strcmp(c.args[i].key, key) == 0) {
      value = c.args[i].value.string;
    }
  }
  return value;
}

inline std::optional<int> IntArg(const grpc::ChannelArguments& args, const char* key) {
  std::optional<int> value;
  const grpc_channel_args c = args.c_channel_args();
  for (size_t i = 0; i < c.num_args; ++i) {
    if (c.args[i].type == GRPC_ARG_INTEGER && std::strcmp(c.args[i].key, key) == 0) {
      value = c.args[i].value.integer;
    }
  }
  return value;
}

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CHANNEL_ARGS_H_
