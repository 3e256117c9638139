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
//	         exist); "hnx": the hash has no field value; "hlt": value is
//	         "<max>:<field>" and the hash's counter field is below max
//	then     operations: name, key index, arguments (batch.op, commit.go)
//
// Returns {1, stored result} for a repeated event id, {0} when a version
// changed (the caller re-reads and retries), {2} when applied, {3} when an
// "hlt" counter is at its max (a quota: nothing is written).
var commitScript = redis.NewScript(commitSrc)

// commitSrc is commitScript's source.
const commitSrc = `
local prev = redis.call('GET', KEYS[1])
if prev then return {1, prev} end
local n = tonumber(ARGV[3])
local i = 4
for _ = 1, n do
  local kind = ARGV[i]
  local k = KEYS[tonumber(ARGV[i + 1])]
  local want = ARGV[i + 2]
  if kind == 'v' then
    -- The version line only (at most 19 digits): not the record.
    local cur = redis.call('GETRANGE', k, 0, 19)
    local v = '0'
    if cur ~= '' then v = string.match(cur, '^(%d+)\n') or '?' end
    if v ~= want then return {0} end
  elseif kind == 'hnx' then
    if redis.call('HEXISTS', k, want) == 1 then return {0} end
  elseif kind == 'hlt' then
    local lim, f = string.match(want, '^(%d+):(.*)$')
    local cur = tonumber(redis.call('HGET', k, f) or '0') or 0
    if cur >= tonumber(lim) then return {3} end
  end
  i = i + 3
end
-- Posting lists (codec.go): 4-byte big-endian largest doc id, then per
-- posting a uvarint doc gap and the tf byte (0x80: two uvarints follow).
local function rv(b, p)
  local v, m = 0, 1
  while true do
    local c = string.byte(b, p)
    if not c then return v, p end
    p = p + 1
    if c < 128 then return v + c * m, p end
    v = v + (c - 128) * m
    m = m * 128
  end
end
local function wv(v)
  local t = {}
  while v >= 128 do
    t[#t + 1] = string.char(v % 128 + 128)
    v = math.floor(v / 128)
  end
  t[#t + 1] = string.char(v)
  return table.concat(t)
end
local function skip(b, p)
  local c = string.byte(b, p)
  p = p + 1
  local _
  if c == 128 then _, p = rv(b, p); _, p = rv(b, p) end
  return p
end
-- seek scans list b for the first posting whose doc is >= d: its start,
-- the previous doc, its doc and the position after its gap (nil when every
-- doc is < d). Inlined decoding: this loop is the cost of a removal.
local byte = string.byte
local function seek(b, d)
  local p, cur, n = 5, 0, #b
  while p <= n do
    local s, prev = p, cur
    local c = byte(b, p)
    p = p + 1
    local g = c
    if c >= 128 then
      g = c - 128
      local m = 128
      repeat
        c = byte(b, p)
        p = p + 1
        if c >= 128 then g = g + (c - 128) * m else g = g + c * m end
        m = m * 128
      until c < 128
    end
    cur = cur + g
    if cur >= d then return s, prev, cur, p end
    c = byte(b, p)
    p = p + 1
    if c == 128 then
      repeat c = byte(b, p); p = p + 1 until c < 128
      repeat c = byte(b, p); p = p + 1 until c < 128
    end
  end
  return nil
end
local function hdr(d)
  return string.char(math.floor(d / 16777216) % 256, math.floor(d / 65536) % 256, math.floor(d / 256) % 256, d % 256)
end
local function rhdr(b)
  local a, c, e, f = string.byte(b, 1, 4)
  return ((a * 256 + c) * 256 + e) * 256 + f
end
-- entries decodes a chunk of gap-coded postings starting at p (first gap
-- relative to base) into docs and their rests.
local function entries(b, p, base, docs, rests)
  local cur, n = base, #b
  while p <= n do
    local g
    g, p = rv(b, p)
    cur = cur + g
    local e = skip(b, p)
    docs[#docs + 1] = cur
    rests[#rests + 1] = string.sub(b, p, e - 1)
    p = e
  end
end
-- pmerge adds the postings of chunk (first doc, last doc, the first's
-- rest then gap-coded postings) to list b.
local function pmerge(b, first, last, chunk)
  local top = rhdr(b)
  if first > top then return hdr(last) .. string.sub(b, 5) .. wv(first - top) .. chunk end
  if first == last then
    -- One posting (a re-indexed document): splice it in, re-encoding the
    -- next gap; a posting of the same document is replaced.
    local s, prev, cur, p = seek(b, first)
    if s and cur == first then
      return string.sub(b, 1, s - 1) .. wv(first - prev) .. chunk .. string.sub(b, skip(b, p))
    elseif s then
      return string.sub(b, 1, s - 1) .. wv(first - prev) .. chunk .. wv(cur - first) .. string.sub(b, p)
    end
  end
  -- Out of order (a re-indexed document): ordered merge, new postings win.
  local od, orr, nd, nr = {}, {}, {}, {}
  entries(b, 5, 0, od, orr)
  entries(wv(first) .. chunk, 1, 0, nd, nr)
  local out, prev, i, j = {}, 0, 1, 1
  while i <= #od or j <= #nd do
    local d, r
    if j > #nd or (i <= #od and od[i] < nd[j]) then
      d, r = od[i], orr[i]; i = i + 1
    else
      d, r = nd[j], nr[j]
      if i <= #od and od[i] == d then i = i + 1 end
      j = j + 1
    end
    out[#out + 1] = wv(d - prev) .. r
    prev = d
  end
  return hdr(prev) .. table.concat(out)
end
-- premove returns list b without document d's posting ('' when it was
-- the only one), or nil when d is not in b.
local function premove(b, d)
  local s, prev, cur, p = seek(b, d)
  if not s or cur ~= d then return nil end
  local e, n = skip(b, p), #b
  if e > n then
    if s == 5 then return '' end
    return hdr(prev) .. string.sub(b, 5, s - 1)
  end
  local g2, p2 = rv(b, e)
  return string.sub(b, 1, s - 1) .. wv(cur - prev + g2) .. string.sub(b, p2)
end
-- A posting list of at most 128 bytes lives in the bucket hash hk (each
-- value at most 64 bytes keeps it a compact listpack): its first 64 bytes
-- as field t, the rest, if any, as field t .. '\0'; a longer one is the
-- string k. sget reads a list from the bucket (nil when absent).
local function sget(hk, t)
  local b = redis.call('HGET', hk, t)
  if b and #b == 64 then b = b .. (redis.call('HGET', hk, t .. '\0') or '') end
  return b
end
-- pshort keeps b, the list that was was bytes long in the bucket, there;
-- false when it is too long (the caller moves it to its own key).
local function pshort(hk, t, b, was)
  local t2 = t .. '\0'
  if b == '' or #b > 128 then
    if was > 64 then redis.call('HDEL', hk, t, t2) elseif was > 0 then redis.call('HDEL', hk, t) end
    return b == ''
  end
  if #b <= 64 then
    redis.call('HSET', hk, t, b)
    if was > 64 then redis.call('HDEL', hk, t2) end
  else
    redis.call('HSET', hk, t, string.sub(b, 1, 64), t2, string.sub(b, 65))
  end
  return true
end
local function padd(k, hk, t, first, last, chunk)
  local n = redis.call('STRLEN', k)
  if n == 0 then
    -- (A new list: an empty one, largest doc id 0; doc ids start at 1.)
    local old = sget(hk, t)
    local b = pmerge(old or hdr(0), first, last, chunk)
    if not pshort(hk, t, b, old and #old or 0) then redis.call('SET', k, b) end
    return
  end
  if n >= 4096 then
    local top = rhdr(redis.call('GETRANGE', k, 0, 3))
    if first > top then
      -- Long list, in order: header update + APPEND (no copy).
      redis.call('SETRANGE', k, 0, hdr(last))
      redis.call('APPEND', k, wv(first - top) .. chunk)
      return
    end
  end
  redis.call('SET', k, pmerge(redis.call('GET', k), first, last, chunk))
end
local function prem(k, hk, t, d)
  local b = redis.call('GET', k)
  if b then
    local nb = premove(b, d)
    if nb == '' then redis.call('DEL', k) elseif nb then redis.call('SET', k, nb) end
    return
  end
  b = sget(hk, t)
  if b then
    local nb = premove(b, d)
    if nb then pshort(hk, t, nb, #b) end
  end
end
-- fields splits a QA's share (agg.go shareOf) into its 17 fields ('' for
-- no share: every field empty).
local function split(s, sep)
  local t, p = {}, 1
  while true do
    local q = string.find(s, sep, p, true)
    if not q then t[#t + 1] = string.sub(s, p); return t end
    t[#t + 1] = string.sub(s, p, q - 1)
    p = q + 1
  end
end
local function fields(v)
  local f = {}
  if v ~= '' then f = split(v, '\31') end
  for j = #f + 1, 17 do f[j] = '' end
  return f
end
-- count adds sign times the agg counts (the fields agg.go readCounts
-- reads) field j of a share holding v names to d.
local prefix, named = {'s:', 'l:', 'h:'}, {[11] = 'sh', [12] = 'us', [13] = 'pa', [14] = 'fa'}
local function add(d, f, n) d[f] = (d[f] or 0) + n end
local function count(d, j, v, sign)
  if j <= 3 then
    add(d, prefix[j] .. v, sign)
  elseif j == 4 then
    if string.find(v, 's', 1, true) then add(d, 'st', sign) end
    if string.find(v, 'q', 1, true) then add(d, 'qu', sign) end
  elseif named[j] and tonumber(v) then
    add(d, named[j], sign * tonumber(v))
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
  elseif op == 'setrange' then
    redis.call('SETRANGE', k, tonumber(ARGV[i + 2]), ARGV[i + 3]); i = i + 4
  elseif op == 'padd' then
    padd(k, KEYS[tonumber(ARGV[i + 2])], ARGV[i + 3], tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5]), ARGV[i + 6]); i = i + 7
  elseif op == 'chg' then
    -- The project's change feed (keys.changes): the entry is the record
    -- version before this write and the ids it changed; the version
    -- becomes "<seq + 1>.<token>".
    local cur = redis.call('HGET', k, 'hv') or ''
    local seq = tonumber(string.match(cur, '^(%d+)%.') or '0')
    redis.call('HSET', k, 'hv', (seq + 1) .. '.' .. ARGV[i + 4])
    local fk = KEYS[tonumber(ARGV[i + 2])]
    redis.call('LPUSH', fk, cur .. ' ' .. ARGV[i + 3])
    redis.call('LTRIM', fk, 0, 511) -- changesCap - 1
    i = i + 5
  elseif op == 'stat' then
    -- A QA's share of the project statistics (agg.go): k the share
    -- hash; the agg hash, the by-trust, by-expiry and awaiting sets; the
    -- qa_id; the document id (the share's field, the by-expiry member);
    -- the new share ('' when the QA is deleted); its by-trust score (''
    -- when it is not ranked). The share its last write left goes out,
    -- the new one in: only what differs. The by-expiry and awaiting
    -- scores are share fields 15 and 16.
    local zk = {KEYS[tonumber(ARGV[i + 3])], KEYS[tonumber(ARGV[i + 4])], KEYS[tonumber(ARGV[i + 5])]}
    local ak, id, doc, new, trust = KEYS[tonumber(ARGV[i + 2])], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], ARGV[i + 9]
    local old = redis.call('HGET', k, doc)
    if trust ~= '' then redis.call('ZADD', zk[1], trust, id) end
    if old ~= new then
      -- The agg counts of the fields that differ (every field when the
      -- QA comes or goes, and "t").
      local of, nf = fields(old or ''), fields(new)
      local d, was, is = {}, (old or '') ~= '', new ~= ''
      if was ~= is then add(d, 't', is and 1 or -1) end
      for j = 1, 14 do
        if was ~= is or of[j] ~= nf[j] then
          if was then count(d, j, of[j], -1) end
          if is then count(d, j, nf[j], 1) end
        end
      end
      for f, n in pairs(d) do
        if n ~= 0 and redis.call('HINCRBY', ak, f, n) == 0 then redis.call('HDEL', ak, f) end
      end
      if trust == '' and string.find(of[4] or '', 'r', 1, true) then redis.call('ZREM', zk[1], id) end
      local member = {doc, id}
      for j = 1, 2 do
        local o, n = of[j + 14] or '', nf[j + 14] or ''
        if n ~= '' then
          if n ~= o then redis.call('ZADD', zk[j + 1], n, member[j]) end
        elseif o ~= '' then
          redis.call('ZREM', zk[j + 1], member[j])
        end
      end
      if new ~= '' then redis.call('HSET', k, doc, new) else redis.call('HDEL', k, doc) end
    end
    i = i + 10
  elseif op == 'xadd' then
    -- An audit entry (team.go auditOp): the stream, its cap, the entry.
    redis.call('XADD', k, 'MAXLEN', '~', ARGV[i + 2], '*', 'e', ARGV[i + 3]); i = i + 4
  elseif op == 'pnop' then
    i = i + 5
  elseif op == 'prem' then
    prem(k, KEYS[tonumber(ARGV[i + 2])], ARGV[i + 3], tonumber(ARGV[i + 4])); i = i + 5
  else
    return redis.error_reply('memex: unknown op ' .. tostring(op))
  end
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[1])
return {2}
`

// changesScript reads a project's changes since its record version was
// ARGV[1] (KEYS: stats, change feed): {hv} when none, {hv, '+', entries'
// ids lists...} when the feed holds every write since, and {hv, '!'} when
// it cannot tell (too far behind, no version, or a feed that does not
// continue from ARGV[1]: a server restarted from an older snapshot or a
// promoted replica that missed writes) — the reader starts over.
var changesScript = redis.NewScript(changesSrc)

// changesSrc is changesScript's source.
const changesSrc = `
local cur = redis.call('HGET', KEYS[1], 'hv') or ''
local since = ARGV[1]
if cur == since then return {cur} end
local cs = tonumber(string.match(cur, '^(%d+)%.') or '')
local ss = tonumber(string.match(since, '^(%d+)%.') or '')
if not cs or not ss or ss >= cs or cs - ss > 512 then return {cur, '!'} end
local es = redis.call('LRANGE', KEYS[2], 0, cs - ss - 1)
if #es ~= cs - ss or string.sub(es[#es], 1, #since + 1) ~= since .. ' ' then return {cur, '!'} end
local out = {cur, '+'}
for _, e in ipairs(es) do
  out[#out + 1] = string.sub(e, (string.find(e, ' ', 1, true) or #e) + 1)
end
return out
`

// receiptScript redeems a receipt (marks it used by a source, once) or,
// with ARGV[3] "restore", gives a redeemed one back (its write did not
// commit: SPEC §5.4), for its source only.
//
//	KEYS[1] the receipt's key; KEYS[2] its search receipt's key (the same
//	for a search receipt); ARGV[1] source; ARGV[2] n, its place among the
//	search receipt's per-QA receipts (0 for a search receipt); ARGV[3]
//	"redeem" or "restore"
//
// A receipt is a string (receiptValue: a state byte, 'n' new or 'u' used,
// the source, NUL, the JSON) written by a plain SET NX, or, for a search
// receipt and all its per-QA receipts, one string under the search
// receipt's key ('F', the count, ':', a state byte each, the source, NUL,
// the JSON). A per-QA receipt with its own key (stored alone, or by an
// earlier version) is found there first. Receipts issued as hashes (j =
// JSON, src, used) by earlier versions are still redeemed until they
// expire.
//
// A redeem returns {0} unknown/expired, {1} another source's, {2} already
// used, {3, JSON, n} redeemed now (the JSON is the search receipt's when
// n > 0); a restore {0}, {1}, or {2} restored (or it was not spent).
var receiptScript = redis.NewScript(`
local key, n, redeem = KEYS[1], 0, ARGV[3] == 'redeem'
local t = redis.call('TYPE', key)['ok']
if t == 'none' and tonumber(ARGV[2]) > 0 then
  key, n = KEYS[2], tonumber(ARGV[2])
  t = redis.call('TYPE', key)['ok']
end
if t == 'hash' and n == 0 then
  local r = redis.call('HMGET', key, 'j', 'src', 'used')
  if not r[1] then return {0} end
  if r[2] ~= ARGV[1] then return {1} end
  if not redeem then redis.call('HSET', key, 'used', '0'); return {2} end
  if r[3] == '1' then return {2} end
  redis.call('HSET', key, 'used', '1')
  return {3, r[1], 0}
end
if t ~= 'string' then return {0} end
local v = redis.call('GET', key)
-- off: the 0-based offset of the receipt's state byte.
local off, src, j = 0, nil, nil
if string.sub(v, 1, 1) == 'F' then
  local m, rest = string.match(v, '^F(%d+):(.*)$')
  if not m or n > tonumber(m) then return {0} end
  src, j = string.match(string.sub(rest, tonumber(m) + 2), '^(.*)%z([^%z]*)$')
  off = #v - #rest + n
elseif n == 0 then
  src, j = string.match(v, '^[nu](.*)%z([^%z]*)$')
end
if not src then return {0} end
if src ~= ARGV[1] then return {1} end
if not redeem then redis.call('SETRANGE', key, off, 'n'); return {2} end
if string.sub(v, off + 1, off + 1) ~= 'n' then return {2} end
redis.call('SETRANGE', key, off, 'u')
return {3, j, n}
`)
