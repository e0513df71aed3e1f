// LD_PRELOAD'ed into a server that bench/server_rejection_cost_bench runs
// under callgrind (--one_cpu): get_nprocs() answers 1, so
// std::thread::hardware_concurrency() does, and Abseil's Mutex (gRPC's locks
// in 1.51) does not spin before it sleeps (absl::base_internal::NumCPUs() >
// 1 is what turns its spin loop on). Valgrind runs one thread at a time: a
// thread that spins on a lock whose holder valgrind has descheduled counts
// up to ~1,500 iterations that depend on valgrind's scheduling, not on the
// code, and moved a server's count by up to 10% from run to run. gRPC sizes
// its thread pools from sysconf(_SC_NPROCESSORS_CONF), which this leaves
// alone. A benchmark's tool, not a library piece.

extern "C" {

__attribute__((visibility("default"))) int get_nprocs() { return 1; }
__attribute__((visibility("default"))) int __get_nprocs() { return 1; }

}  // extern "C"
