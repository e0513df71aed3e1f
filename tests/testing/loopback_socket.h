// File: tests/testing/loopback_socket.h
//
// A plain TCP connection to a port of 127.0.0.1, for tests that talk to a
// server below its protocol (raw HTTP, idle or slow connections).

#ifndef GRPC_RESILIENCE_TESTS_TESTING_LOOPBACK_SOCKET_H_
#define GRPC_RESILIENCE_TESTS_TESTING_LOOPBACK_SOCKET_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace resilience::testing {

// ConnectLoopback()
//
// A socket connected to 127.0.0.1:port (blocking); -1 when refused.
inline int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_TESTING_LOOPBACK_SOCKET_H_
