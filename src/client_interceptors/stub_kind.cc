#include "grpc_resilience/internal/client_interceptors/stub_kind.h"

#include <link.h>

#include <cstdint>

namespace resilience::internal {

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
