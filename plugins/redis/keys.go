package redisstore

// Every Redis key of the QA store is built here (docs/REDIS.md lists them;
// the namespaced store's are built in items.go).
// All keys of project p share the hash tag {p}, so every multi-key update of
// a project runs in one Lua script on one cluster slot. Only the project
// registry, the qa_id index and the format mark are outside any project's
// tag.

import (
	"hash/fnv"
	"strconv"
	"strings"
)

type keys struct{ prefix string }

// tag is "<prefix>:{<project>}:".
func (k keys) tag(p string) string { return k.prefix + ":{" + p + "}:" }

// bucketOf is the bucket, of n, that s falls in: FNV-1a of s modulo n, in
// decimal.
func bucketOf(s string, n uint32) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return strconv.FormatUint(uint64(h.Sum32()%n), 10)
}

// ids is the bucket of the qa_id index (ids.go) that holds id: a hash of
// qa_id → "<owning project> <claimed at, ms base 36>", in idBuckets
// buckets by FNV of the id, outside every project's tag.
func (k keys) ids(id string) string { return k.prefix + ":ids:" + bucketOf(id, idBuckets) }

// idBuckets is the number of qa_id index buckets: ~10 claims a bucket at
// 10k QAs, listpacks up to ~450k QAs in the store (Redis keeps a hash of
// at most 512 entries so). Each bucket is a key of its own (~100 bytes
// of key and listpack overhead), so more buckets cost a small store
// more: 4,096 buckets cost ~50 B/QA at 10k, 1,024 ~32 B/QA.
const idBuckets = 1024

// oldIDBuckets is the number of buckets of the index in its first layout
// (idsLayout "1"): FNV of the id modulo 4,096. An id's bucket modulo
// idBuckets is its bucket now, so buckets below idBuckets are the same
// keys in both layouts and the others are merged into them
// (mergeOldIDBuckets).
const oldIDBuckets = 4096

// idsBuilt marks the qa_id index as holding every QA the store held when
// it was first built (ids.go); its value is the layout (idsLayout).
func (k keys) idsBuilt() string { return k.prefix + ":ids:built" }

// idsLayout is the layout of the qa_id index in idBuckets buckets; "1" is
// oldIDBuckets buckets.
const idsLayout = "2"

// idsBucket is bucket n of the qa_id index (of either layout).
func (k keys) idsBucket(n int) string { return k.prefix + ":ids:" + strconv.Itoa(n) }

// format holds the store's format version (FormatVersion, format.go), in
// decimal, outside every project's tag: absent in a store written before
// the mark existed.
func (k keys) format() string { return k.prefix + ":format" }

// projects is the set of project ids the store holds.
func (k keys) projects() string { return k.prefix + ":projects" }

// qa is a QA record: "<version>\n", its leading fields and the JSON of
// the others (stored.encode in codec.go).
func (k keys) qa(p, id string) string { return k.tag(p) + "qa:" + id }

// docs maps document ids (decimal) to "<qa_id> <created_at ms, base 36>"
// (docValue), in buckets of docBucket ids so each bucket stays a compact
// listpack hash. List, Expire and the statistics' build (or the scan
// that answers Stats while another process builds them) read every bucket
// of a project.
func (k keys) docs(p string, doc uint64) string {
	return k.tag(p) + "docs:" + strconv.FormatUint(doc/docBucket, 10)
}

// docBucket is how many document ids share one docs hash (Redis keeps
// hashes of ≤ 128 small entries as listpacks).
const docBucket = 128

// hashes maps a content-hash prefix (hashField) to a qa_id (candidate
// dedup), in hashBuckets buckets chosen by the prefix, so each bucket of a
// project of up to ~100k QAs stays a compact listpack hash.
func (k keys) hashes(p, field string) string {
	return k.tag(p) + "hash:" + bucketOf(field, hashBuckets)
}

// hashBuckets is the number of content-hash index buckets per project.
const hashBuckets = 1024

// stats holds collection statistics per scope ("n:"/"q:"/"a:" + scope),
// the document id sequence ("seq"), the index version ("iv") and the
// record version ("hv": "<seq>.<token>", see changes).
func (k keys) stats(p string) string { return k.tag(p) + "stats" }

// post is the packed posting list of term in scope of p (scope "o" = the
// project's own QAs, "s:<target>" = its QAs shared with target).
func (k keys) post(p, scope, term string) string { return k.tag(p) + "p:" + scope + ":" + term }

// postBucket is the hash holding, as fields shortFields(term), the
// posting lists of scope of p that are at most shortListMax bytes long
// (commitScript moves a list to its own key post(p, scope, term) when it
// grows past that): one Redis key per rare term would cost more than its
// postings.
func (k keys) postBucket(p, scope, term string) string {
	return k.tag(p) + "ps:" + scope + ":" + bucketOf(term, postBuckets)
}

// postBuckets is the number of short-posting-list hashes per scope.
const postBuckets = 2048

// shortFields are the fields of term's list in its postBucket: a list of
// at most shortListMax bytes is its first 64 bytes (Redis keeps a hash a
// compact listpack while each value is at most 64 bytes,
// hash-max-listpack-value) and, past that, the rest under the term and a
// NUL (no term holds one). commitScript keeps them so.
func shortFields(term string) []string { return []string{term, term + "\x00"} }

// shortListMax is the longest posting list kept in its postBucket: a list
// of its own key costs ~80 bytes more than its bytes (the key, its
// object, its entry in Redis's key table), two listpack values ~12.
const shortListMax = 128

// shortList is the list the HMGET of shortFields answered ("" when
// absent): the second part only follows a full first one.
func shortList(parts []any) string {
	first, _ := parts[0].(string)
	if len(first) < 64 || len(parts) < 2 {
		return first
	}
	rest, _ := parts[1].(string)
	return first + rest
}

// lens holds the field lengths (lensEntry) of the lensBucket documents of
// p whose ids share doc/lensBucket, lensSize bytes each at
// (doc%lensBucket)*lensSize. A deleted document's entry stays (harmless:
// it is in no posting list).
func (k keys) lens(p string, doc uint64) string {
	return k.tag(p) + "len:" + strconv.FormatUint(doc/lensBucket, 10)
}

// The kept statistics (agg.go) are in layout 5, under "k4:" keys (layout
// 4's but its by-trust ends); a store written with layout 1, 2, 3 or 4
// (oldStatsKeys) gets layout 5 built from its records at its first Stats
// (the shares a QA has already are kept), and the older layouts'
// keys deleted.

// agg holds the project's kept statistics (agg.go): the counts of
// core.AddCounts as fields ("t", "s:"/"l:"/"h:" + status, level, trust
// bucket, "sh", "us", "pa", "fa", "st", "qu"), and aggBuilt once they hold
// every QA (its value the layout: "1" was layout 4).
func (k keys) agg(p string) string { return k.tag(p) + "k4:agg" }

// shares maps the document id of each QA of p in doc/docBucket to its
// share of the statistics (shareOf), in buckets so each stays a compact
// listpack hash (a document id field is a listpack integer).
func (k keys) shares(p string, doc uint64) string {
	return k.tag(p) + "k4:sh:" + strconv.FormatUint(doc/docBucket, 10)
}

// byTrust holds the live QAs (qa_ids) of p whose document ids share
// doc/docBucket, scored by their trust negated: in (score, qa_id) order
// its first members are its top ones and its last its worst
// (core.FinishStats). One sorted set per bucket of documents, so each
// stays a compact listpack (Redis keeps sorted sets of ≤ 128 members so;
// one set of a whole project costs ~110 B a member).
func (k keys) byTrust(p string, doc uint64) string {
	return k.tag(p) + "k4:t:" + strconv.FormatUint(doc/docBucket, 10)
}

// byExpiry holds the document ids of the QAs of p with an expiry whose
// ids share doc/docBucket, scored by it in ms (expiring soon: only
// counted, so no qa_id is needed), a listpack per bucket like byTrust's.
func (k keys) byExpiry(p string, doc uint64) string {
	return k.tag(p) + "k4:e:" + strconv.FormatUint(doc/docBucket, 10)
}

// awaiting holds p's live quarantined QAs (qa_ids) scored by created_at
// in ms negated (awaiting review: the newest first, qa_ids ascending).
func (k keys) awaiting(p string) string { return k.tag(p) + "k4:quar" }

// oldStatsKeys are the keys of p's statistics in layouts 1 (qa_id-keyed
// shares of named counters, qa_id members in every set), 2 (the shares
// of layout 3, one by-trust and one by-expiry set per project), 3
// (layout 4's keys with the trust and created_at scores as they are) and
// 4 (layout 5's keys and the by-trust buckets' first and last members,
// "k4:tf" and "k4:tl") for its documents up to seq: deleted once layout
// 5 is built.
func (k keys) oldStatsKeys(p string, seq uint64) []string {
	t := k.tag(p)
	out := []string{t + "agg", t + "z:trust", t + "z:ttl", t + "z:quar", t + "k2:agg", t + "k2:trust", t + "k2:ttl", t + "k2:quar",
		t + "k3:agg", t + "k3:quar", t + "k4:tf", t + "k4:tl"}
	for b := uint64(0); b <= seq/docBucket; b++ {
		n := strconv.FormatUint(b, 10)
		out = append(out, t+"sh:"+n, t+"k2:sh:"+n, t+"k3:sh:"+n, t+"k3:t:"+n, t+"k3:e:"+n)
	}
	return out
}

// rep is the project's reputation book: "sa:"/"sd:" + source (agreement),
// "cp:"/"cr:" + creator (proven, rejected).
func (k keys) rep(p string) string { return k.tag(p) + "rep" }

// days counts validations per UTC day: "<YYYY-MM-DD>:p" / ":f".
func (k keys) days(p string) string { return k.tag(p) + "days" }

// event is the dedup record of one write (24 h TTL). kind is c, h, v, p,
// d, i, x or b (a chunk of the statistics' build); from is the requesting
// project.
func (k keys) event(p, kind, from, id string) string {
	return k.tag(p) + "ev:" + kind + ":" + from + ":" + id
}

// audit is the project's capped audit stream.
func (k keys) audit(p string) string { return k.tag(p) + "audit" }

// receipt is a receipt (a string, receiptValue in team.go): a search
// receipt holds its own state byte and one per QA it served ('n' new, 'u'
// used), the source, NUL and the JSON; a per-QA receipt "<search>.<n>" has
// no key of its own and is redeemed in its search receipt's value.
func (k keys) receipt(p, id string) string { return k.tag(p) + "rc:" + id }

// sharers is the set of projects that share QAs with p.
func (k keys) sharers(p string) string { return k.tag(p) + "sharers" }

// sharedIn maps a qa_id shared with p to its owning project.
func (k keys) sharedIn(p string) string { return k.tag(p) + "shin" }

// changes is the project's change feed: a list, newest first, of one entry
// per write that changed records or the reputation book, "<hv before>
// <ids>" (ids space-separated, "~" for the reputation book, "*" for more
// than maxChangedIDs), capped at changesCap entries. A search's record
// memo follows it from the hv it last saw (changesScript) instead of
// reading every candidate's record again.
func (k keys) changes(p string) string { return k.tag(p) + "chg" }

// changesCap bounds the change feed; a memo more writes behind starts over.
const changesCap = 512

// maxChangedIDs is the most record ids one feed entry lists.
const maxChangedIDs = 32

// written tells, of a key a write changes, whether it is a QA record (id)
// or the reputation book (rep), and its project.
func (k keys) written(key string) (project, id string, rep bool) {
	rest, ok := strings.CutPrefix(key, k.prefix+":{")
	if !ok {
		return "", "", false
	}
	project, rest, ok = strings.Cut(rest, "}:")
	if !ok {
		return "", "", false
	}
	if id, ok := strings.CutPrefix(rest, "qa:"); ok {
		return project, id, false
	}
	return project, "", rest == "rep"
}

// Scopes of the inverted index kept under a project's tag.
const ownScope = "o"

func sharedScope(target string) string { return "s:" + target }
