#include "examples/cache_service/cache_service_impl.h"

#include <string>
#include <utility>
#include <vector>

#include "examples/cache_service/status_text.h"

namespace cache_service {

namespace {

// One Dump: walks the store a run at a time, one write in flight; the run and
// the item being written are all it holds. Deletes itself when done.
class DumpWriter final : public grpc::ServerWriteReactor<cache::v1::DumpItem> {
 public:
  explicit DumpWriter(CacheStore* store) : store_(store) { WriteNext(); }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "Dump: stream closed by client"));
      return;
    }
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (next_ == run_.size()) {
      // The store's lock is held only inside EntriesAfter(), never while a
      // write waits for the client. The cursor is the key of the last item
      // sent: "" (before every key, as keys are never empty) at first.
      run_ = store_->EntriesAfter(item_.key(), CacheServiceImpl::kDumpRunEntries,
                                  CacheServiceImpl::kDumpRunBytes);
      next_ = 0;
      if (run_.empty()) {
        Finish(grpc::Status::OK);
        return;
      }
    }
    auto& [key, value] = run_[next_++];
    item_.set_key(std::move(key));
    item_.set_value(std::move(value));
    StartWrite(&item_);
  }

  CacheStore* const store_;
  std::vector<std::pair<std::string, std::string>> run_;
  size_t next_ = 0;
  cache::v1::DumpItem item_;
};

}  // namespace

grpc::ServerUnaryReactor* CacheServiceImpl::Get(grpc::CallbackServerContext* context,
                                                const cache::v1::GetReq* request,
                                                cache::v1::GetResp* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> value = store_->Get(request->key());
  if (!value.ok()) {
    reactor->Finish(ToGrpcStatus(value.status()));
  } else {
    response->set_value(*std::move(value));
    reactor->Finish(grpc::Status::OK);
  }
  return reactor;
}

grpc::ServerUnaryReactor* CacheServiceImpl::Store(grpc::CallbackServerContext* context,
                                                  const cache::v1::StoreReq* request,
                                                  cache::v1::StoreResp* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(store_->Store(request->key(), request->value())));
  return reactor;
}

grpc::ServerWriteReactor<cache::v1::DumpItem>* CacheServiceImpl::Dump(
    grpc::CallbackServerContext* /*context*/, const cache::v1::DumpReq* /*request*/) {
  return new DumpWriter(store_);
}

}  // namespace cache_service
