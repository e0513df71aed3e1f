// The targets the library's endpoint picker resolves itself (gRPC 1.51 has
// no public resolver API): ipv4:/ipv6: lists, dns: names and bare
// host:port; others are left to gRPC, malformed ones named.

#include "src/client_interceptors/endpoint_resolver.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Contains;

TEST(EndpointResolverTest, AddressListsAreTakenAsTheyAre) {
  absl::StatusOr<EndpointResolver::Target> v4 =
      EndpointResolver::Parse("ipv4:127.0.0.1:50051,10.0.0.2:443,127.0.0.1:50051");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_THAT(v4->fixed, ElementsAre("ipv4:127.0.0.1:50051", "ipv4:10.0.0.2:443"));
  EXPECT_THAT(v4->authority, IsEmpty());
  absl::StatusOr<EndpointResolver::Target> v6 =
      EndpointResolver::Parse("ipv6:[::1]:50051,[0:0::2]");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_THAT(v6->fixed, ElementsAre("ipv6:[::1]:50051", "ipv6:[::2]:443"));
  absl::StatusOr<EndpointResolver::Target> slashes = EndpointResolver::Parse("ipv4:///1.2.3.4:5");
  ASSERT_TRUE(slashes.ok()) << slashes.status();
  EXPECT_THAT(slashes->fixed, ElementsAre("ipv4:1.2.3.4:5"));
  // What the per-endpoint breakers are told the target lists.
  EXPECT_EQ(EndpointResolver::ListedCount("ipv4:127.0.0.1:50051,10.0.0.2:443,127.0.0.1:50051"), 2);
  EXPECT_EQ(EndpointResolver::ListedCount("dns:///localhost:50051"), 0);
  EXPECT_EQ(EndpointResolver::ListedCount("unix:/tmp/s"), 0);
}

TEST(EndpointResolverTest, NamesAreResolvedWithTheTargetsAuthority) {
  for (const char* target : {"dns:///localhost:50051", "dns:localhost:50051", "localhost:50051"}) {
    absl::StatusOr<EndpointResolver::Target> t = EndpointResolver::Parse(target);
    ASSERT_TRUE(t.ok()) << target << ": " << t.status();
    EXPECT_THAT(t->fixed, IsEmpty()) << target;
    EXPECT_EQ(t->host, "localhost") << target;
    EXPECT_EQ(t->port, "50051") << target;
    EXPECT_EQ(t->authority, "localhost:50051") << target;
  }
  absl::StatusOr<EndpointResolver::Target> no_port = EndpointResolver::Parse("example.com");
  ASSERT_TRUE(no_port.ok());
  EXPECT_EQ(no_port->port, "443");
  absl::StatusOr<std::vector<std::string>> found = EndpointResolver::Resolve("localhost", "7");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_THAT(*found, Contains(::testing::AnyOf("ipv4:127.0.0.1:7", "ipv6:[::1]:7")));
  EXPECT_FALSE(EndpointResolver::Resolve("no-such-host.invalid", "7").ok());
}

TEST(EndpointResolverTest, OtherSchemesAreLeftToGrpcAndBadTargetsNamed) {
  for (const char* target : {"unix:/tmp/socket", "unix-abstract:x", "xds:///service",
                             "vsock:1:2", "custom://auth/x"}) {
    EXPECT_EQ(EndpointResolver::Parse(target).status().code(), absl::StatusCode::kUnimplemented)
        << target;
  }
  EXPECT_EQ(EndpointResolver::Parse("dns://8.8.8.8/example.com:443").status().message(),
            "target \"dns://8.8.8.8/example.com:443\": a DNS server of its own (dns://8.8.8.8/) "
            "is not asked by the library's resolver");
  EXPECT_EQ(EndpointResolver::Parse("ipv4:300.0.0.1:5").status().message(),
            "target \"ipv4:300.0.0.1:5\": \"300.0.0.1\" is not an IPv4 address");
  EXPECT_EQ(EndpointResolver::Parse("ipv6:::1:5").status().message(),
            "target \"ipv6:::1:5\": an IPv6 address must be in brackets: [addr]:port");
  EXPECT_EQ(EndpointResolver::Parse("localhost:http").status().message(),
            "target \"localhost:http\": port \"http\" is not a number");
  EXPECT_EQ(EndpointResolver::Parse("localhost:").status().message(),
            "target \"localhost:\": an empty port after ':'");
}

TEST(EndpointResolverTest, AResolverGivesItsEndpointsToItsListener) {
  std::vector<std::string> fixed;
  {
    EndpointResolver resolver(*EndpointResolver::Parse("ipv4:1.2.3.4:5"), absl::Seconds(30),
                              [&](const std::vector<std::string>& e) { fixed = e; });
    resolver.Start();
  }
  EXPECT_THAT(fixed, ElementsAre("ipv4:1.2.3.4:5"));
  Mutex mu;
  std::vector<std::string> resolved;
  EndpointResolver resolver(*EndpointResolver::Parse("localhost:7"), absl::Seconds(30),
                            [&](const std::vector<std::string>& e) {
                              MutexLock lock(&mu);
                              resolved = e;
                            });
  resolver.Start();
  EXPECT_TRUE(testing::Eventually([&] {
    MutexLock lock(&mu);
    return !resolved.empty();
  }));
  EXPECT_TRUE(resolver.last_error().ok());
}

}  // namespace
}  // namespace resilience
