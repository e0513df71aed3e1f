#include "src/client_interceptors/stub_kind.h"

#include <link.h>

#include <cstdint>
#include <string>

#include "google/protobuf/descriptor.h"

namespace resilience::internal {

bool IsLinkedProtobufMethod(absl::string_view full_method) {
  // "/pkg.Service/Method" -> "pkg.Service.Method"
  if (full_method.size() < 4 || full_method[0] != '/') return false;
  std::string dotted(full_method.substr(1));
  const size_t slash = dotted.rfind('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == dotted.size()) return false;
  dotted[slash] = '.';
  return google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(dotted) != nullptr;
}

bool InReadOnlyStaticStorage(const void* p) {
  struct Query {
    uintptr_t address;
    bool read_only = false;
  } query{reinterpret_cast<uintptr_t>(p)};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t /*size*/, void* data) -> int {
        auto* q = static_cast<Query*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD || (segment.p_flags & PF_W) != 0) continue;
          const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          if (q->address >= start && q->address - start < segment.p_memsz) {
            q->read_only = true;
            return 1;  // stop walking
          }
        }
        return 0;
      },
      &query);
  return query.read_only;
}

}  // namespace resilience::internal
