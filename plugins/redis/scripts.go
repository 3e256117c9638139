package redisstore

import "github.com/redis/go-redis/v9"

// Every Lua script the store runs. docs/REDIS.md describes them.

// commitScript applies one write of a project atomically: it dedupes the
// write's event id, checks the expected version of every record the write
// read (optimistic concurrency: trust is computed in Go by package trust,
// never here), then applies a list of primitive operations computed in Go.
//
//	KEYS[1]  the event key; KEYS[2..] the keys the operations touch (all
//	         under one project's hash tag)
//	ARGV[1]  event TTL in seconds
//	ARGV[2]  the write's result, stored under the event key and returned
//	         again for a repeated event id
//	ARGV[3]  number n of checks, then n triples (kind, key index, value):
//	         "v": the record's version is value ("0": the key must not
//	         exist); "hnx": the hash has no field value
//	then     operations: name, key index, arguments (see ops in write.go)
//
// Returns {1, stored result} for a repeated event id, {0} when a version
// changed (the caller re-reads and retries), {2} when applied.
var commitScript = redis.NewScript(`
local prev = redis.call('GET', KEYS[1])
if prev then return {1, prev} end
local n = tonumber(ARGV[3])
local i = 4
for _ = 1, n do
  local kind = ARGV[i]
  local k = KEYS[tonumber(ARGV[i + 1])]
  local want = ARGV[i + 2]
  if kind == 'v' then
    local cur = redis.call('GET', k)
    local v = '0'
    if cur then v = string.match(cur, '^(%d+)\n') or '?' end
    if v ~= want then return {0} end
  elseif kind == 'hnx' then
    if redis.call('HEXISTS', k, want) == 1 then return {0} end
  end
  i = i + 3
end
local function prem(k, d)
  local b = redis.call('GET', k)
  if not b then return end
  local from = 1
  while true do
    local j = string.find(b, d, from, true)
    if not j then return end
    if (j - 1) % 10 == 0 then
      if #b == 10 then
        redis.call('DEL', k)
      else
        redis.call('SET', k, string.sub(b, 1, j - 1) .. string.sub(b, j + 10))
      end
      return
    end
    from = j + 1
  end
end
local argc = #ARGV
while i <= argc do
  local op = ARGV[i]
  local k = KEYS[tonumber(ARGV[i + 1])]
  if op == 'set' then
    redis.call('SET', k, ARGV[i + 2]); i = i + 3
  elseif op == 'del' then
    redis.call('DEL', k); i = i + 2
  elseif op == 'hset' then
    redis.call('HSET', k, ARGV[i + 2], ARGV[i + 3]); i = i + 4
  elseif op == 'hdel' then
    redis.call('HDEL', k, ARGV[i + 2]); i = i + 3
  elseif op == 'hdelif' then
    if redis.call('HGET', k, ARGV[i + 2]) == ARGV[i + 3] then redis.call('HDEL', k, ARGV[i + 2]) end
    i = i + 4
  elseif op == 'hincr' then
    if redis.call('HINCRBY', k, ARGV[i + 2], ARGV[i + 3]) == 0 then redis.call('HDEL', k, ARGV[i + 2]) end
    i = i + 4
  elseif op == 'hincrf' then
    redis.call('HINCRBYFLOAT', k, ARGV[i + 2], ARGV[i + 3]); i = i + 4
  elseif op == 'zadd' then
    redis.call('ZADD', k, ARGV[i + 2], ARGV[i + 3]); i = i + 4
  elseif op == 'zrem' then
    redis.call('ZREM', k, ARGV[i + 2]); i = i + 3
  elseif op == 'sadd' then
    redis.call('SADD', k, ARGV[i + 2]); i = i + 3
  elseif op == 'append' then
    -- Short lists are rewritten with SET: exact size (embedded when tiny)
    -- instead of APPEND's doubling growth.
    if redis.call('STRLEN', k) < 4096 then
      local cur = redis.call('GET', k)
      if cur then redis.call('SET', k, cur .. ARGV[i + 2]) else redis.call('SET', k, ARGV[i + 2]) end
    else
      redis.call('APPEND', k, ARGV[i + 2])
    end
    i = i + 3
  elseif op == 'prem' then
    prem(k, ARGV[i + 2]); i = i + 3
  else
    return redis.error_reply('memex: unknown op ' .. tostring(op))
  end
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[1])
return {2}
`)

// issueReceiptScript stores a receipt once (idempotent per id).
//
//	KEYS[1] receipt key; ARGV[1] JSON, ARGV[2] source, ARGV[3] expiry (unix ms)
var issueReceiptScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'j', ARGV[1], 'src', ARGV[2], 'used', '0')
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return 1
`)

// redeemReceiptScript marks a receipt used by a source, once.
//
//	KEYS[1] receipt key; ARGV[1] source
//
// Returns {0} unknown/expired, {1} another source's, {2} already used,
// {3, JSON} redeemed now.
var redeemReceiptScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 'j', 'src', 'used')
if not r[1] then return {0} end
if r[2] ~= ARGV[1] then return {1} end
if r[3] == '1' then return {2} end
redis.call('HSET', KEYS[1], 'used', '1')
return {3, r[1]}
`)
