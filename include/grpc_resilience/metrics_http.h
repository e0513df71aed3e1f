// File: include/grpc_resilience/metrics_http.h
//
// The optional /metrics HTTP endpoint (library grpc_resilience::metrics_http,
// on civetweb).

#ifndef GRPC_RESILIENCE_METRICS_HTTP_H_
#define GRPC_RESILIENCE_METRICS_HTTP_H_

#include "src/metrics_http/metrics_http_server.h"

#endif  // GRPC_RESILIENCE_METRICS_HTTP_H_
