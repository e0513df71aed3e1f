#include "src/client_interceptors/health_probe_sender.h"

#include <utility>
#include <vector>

#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/slice.h"

namespace resilience {

struct HealthProbeSender::Probe {
  grpc::ClientContext context;
  grpc::ByteBuffer request;
  grpc::ByteBuffer response;
  std::shared_ptr<grpc::Channel> channel;  // kept alive while the probe runs
  std::unique_ptr<grpc::GenericStub> stub;
  StatusDone done;
};

HealthProbeSender::HealthProbeSender(std::string target,
                                     std::shared_ptr<grpc::ChannelCredentials> credentials,
                                     grpc::ChannelArguments args, Clock& clock,
                                     std::function<void()> after_answer)
    : target_(std::move(target)),
      credentials_(std::move(credentials)),
      args_(std::move(args)),
      clock_(clock),
      after_answer_(std::move(after_answer)) {}

HealthProbeSender::~HealthProbeSender() {
  MutexLock lock(&mu_);
  shutting_down_ = true;
  for (auto& [raw, probe] : in_flight_) probe->context.TryCancel();
  while (!in_flight_.empty()) idle_.Wait(&mu_);
}

grpc::ByteBuffer HealthProbeSender::Request(const std::string& service) {
  // HealthCheckRequest { string service = 1; }: tag 0x0a, varint length, bytes.
  std::string bytes;
  if (!service.empty()) {
    bytes.push_back('\x0a');
    for (size_t n = service.size(); ; n >>= 7) {
      if (n < 0x80) {
        bytes.push_back(static_cast<char>(n));
        break;
      }
      bytes.push_back(static_cast<char>((n & 0x7f) | 0x80));
    }
    bytes += service;
  }
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

RecoveryProbe::Answer HealthProbeSender::AnswerOf(const grpc::Status& status,
                                                  const grpc::ByteBuffer& response) {
  using Answer = RecoveryProbe::Answer;
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      break;
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::NOT_FOUND:
      return Answer::kUnknown;
    default:
      return Answer::kUnreachable;
  }
  // HealthCheckResponse { ServingStatus status = 1; } with SERVING = 1:
  // exactly tag 0x08 then 0x01 (other fields are not defined).
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return Answer::kNotServing;
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes == std::string("\x08\x01", 2) ? Answer::kServing : Answer::kNotServing;
}

std::shared_ptr<grpc::Channel> HealthProbeSender::ChannelFor(const std::string& endpoint) {
  if (endpoint.empty()) {
    if (target_channel_ == nullptr) {
      target_channel_ = grpc::CreateCustomChannel(target_, credentials_, args_);
    }
    return target_channel_;
  }
  auto it = endpoint_channels_.find(endpoint);
  if (it != endpoint_channels_.end()) return it->second;
  if (endpoint_channels_.size() >= kMaxEndpointChannels) {
    endpoint_channels_.erase(endpoint_channels_.begin());
  }
  // A channel to that address alone (no load balancing to speak of).
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(endpoint, credentials_, grpc::ChannelArguments());
  endpoint_channels_.emplace(endpoint, channel);
  return channel;
}

void HealthProbeSender::Check(const std::string& endpoint, const std::string& service,
                              absl::Duration timeout, Done done) {
  Check(endpoint, service, timeout,
        StatusDone([done = std::move(done)](const grpc::Status&, RecoveryProbe::Answer answer) {
          done(answer);
        }));
}

void HealthProbeSender::Check(const std::string& endpoint, const std::string& service,
                              absl::Duration timeout, StatusDone done) {
  auto owned = std::make_unique<Probe>();
  Probe* probe = owned.get();
  probe->request = Request(service);
  probe->done = std::move(done);
  probe->context.set_deadline(absl::ToChronoTime(clock_.WallNow() + timeout));
  {
    MutexLock lock(&mu_);
    if (shutting_down_) return;
    probe->channel = ChannelFor(endpoint);
    probe->stub = std::make_unique<grpc::GenericStub>(probe->channel);
    in_flight_.emplace(probe, std::move(owned));
  }
  probe->stub->UnaryCall(&probe->context, kMethod, grpc::StubOptions(), &probe->request,
                         &probe->response,
                         [this, probe](grpc::Status status) { Finished(probe, status); });
}

void HealthProbeSender::Finished(Probe* probe, const grpc::Status& status) {
  probe->done(status, AnswerOf(status, probe->response));
  if (after_answer_) after_answer_();
  std::unique_ptr<Probe> owned;
  MutexLock lock(&mu_);
  auto it = in_flight_.find(probe);
  owned = std::move(it->second);
  in_flight_.erase(it);
  if (in_flight_.empty()) idle_.SignalAll();
}

}  // namespace resilience
