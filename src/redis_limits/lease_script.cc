#include "src/redis_limits/lease_script.h"

#include <hiredis/hiredis.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace resilience {

// Numbers in the hash are written with 17 significant digits: Lua's own
// tostring() keeps 14, too few for microsecond timestamps. `x ~= x` is NaN.
const char LeaseScript::kSource[] = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local repairs = 0
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' and kind ~= 'none' then
  redis.call('DEL', KEYS[1])
  repairs = 2
end
local s = redis.call('HMGET', KEYS[1], 'tokens', 'us')
local tokens = tonumber(s[1])
local last = tonumber(s[2])
if s[1] == false and s[2] == false then
  if repairs == 0 then
    tokens = burst
    if ARGV[4] == '1' and ARGV[5] ~= '1' then repairs = 1 end
  else
    tokens = 0
  end
  last = now
end
if tokens == nil or tokens ~= tokens or tokens < 0 then
  tokens = 0
  repairs = bit.bor(repairs, 2)
elseif tokens > burst then
  if tokens == math.huge then repairs = bit.bor(repairs, 2) end
  tokens = burst
end
if last == nil or last ~= last or last == -math.huge or last == math.huge then
  last = now
  repairs = bit.bor(repairs, 2)
elseif last > now then
  last = now
  repairs = bit.bor(repairs, 4)
end
if now > last then
  tokens = math.min(burst, tokens + (now - last) * rate / 1000000)
  last = now
end
local granted = math.floor(math.min(want, tokens))
if granted < 0 then granted = 0 end
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'us', string.format('%.17g', last))
if ARGV[5] == '1' then
  local full_ms = math.ceil((burst - tokens) * 1000 / rate) + 1000
  redis.call('PEXPIRE', KEYS[1], string.format('%d', full_ms))
else
  redis.call('PERSIST', KEYS[1])
end
return {granted, string.format('%.17g', tokens), repairs}
)lua";

std::vector<std::string> LeaseScript::Args(const std::string& key, double rate, int64_t burst,
                                           int64_t want, bool leased_before,
                                           bool expire_when_full) {
  return {"1",
          key,
          absl::StrFormat("%.17g", rate),
          absl::StrCat(burst),
          absl::StrCat(want),
          leased_before ? "1" : "0",
          expire_when_full ? "1" : "0"};
}

absl::StatusOr<LeaseScript::Reply> LeaseScript::Parse(const redisReply* reply, int64_t want) {
  if (reply->type == REDIS_REPLY_ERROR) {
    return absl::UnavailableError(std::string(reply->str, reply->len));
  }
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
      reply->element[0]->type != REDIS_REPLY_INTEGER ||
      reply->element[1]->type != REDIS_REPLY_STRING ||
      reply->element[2]->type != REDIS_REPLY_INTEGER) {
    return absl::UnavailableError(absl::StrCat("unexpected reply (type ", reply->type, ")"));
  }
  Reply r;
  r.granted = std::clamp<int64_t>(reply->element[0]->integer, 0, want);
  if (!absl::SimpleAtod(absl::string_view(reply->element[1]->str, reply->element[1]->len),
                        &r.remaining)) {
    r.remaining = 0;
  }
  r.repairs = reply->element[2]->integer;
  return r;
}

}  // namespace resilience
