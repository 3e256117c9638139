package core

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The namespaced store (SPEC §11, docs/SCOPES.md): JSON objects under
// (namespace, key), for what is not a QA — a user's preferences, a
// project's conventions, what a conversation established. Scopes
// (scope.go) name the namespaces memex itself uses; library users choose
// their own.

// Limits of the namespaced store.
const (
	MaxNamespaceDepth   = 8
	MaxSegmentBytes     = 128
	MaxItemKeyBytes     = 256
	MaxItemValueBytes   = 256 << 10 // hard cap; a policy may set a lower one
	DefaultItemListSize = 100
	MaxItemListSize     = 1000
	DefaultItemTopK     = 10
	MaxItemTopK         = 100
	// MaxItemSearchScan is how many items under a prefix Search reads at
	// most when it has a query: it scores each of them (docs/SCOPES.md).
	MaxItemSearchScan = 10_000
)

// Namespace is a path of segments, outermost first: {"user", "alice"}.
// A segment is 1–128 bytes of UTF-8 without control characters and
// without "/" (the separator of its text form, String), so no segment can
// reach into another namespace.
type Namespace []string

// Validate checks every segment; the empty namespace (the root) is valid
// as a prefix only (ValidatePrefix).
func (ns Namespace) Validate() error {
	if len(ns) == 0 {
		return Invalid("namespace", "must have at least one segment")
	}
	return ns.ValidatePrefix()
}

// ValidatePrefix checks ns as a prefix of namespaces: like Validate, but
// the empty namespace (every item) is allowed.
func (ns Namespace) ValidatePrefix() error {
	if len(ns) > MaxNamespaceDepth {
		return Invalid("namespace", "has %d segments, at most %d", len(ns), MaxNamespaceDepth)
	}
	for i, s := range ns {
		if err := checkName(s, MaxSegmentBytes, true); err != "" {
			return Invalid("namespace", "segment %d %s", i+1, err)
		}
	}
	return nil
}

// checkName returns why s is not a valid segment or key ("" when it is).
func checkName(s string, max int, segment bool) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > max:
		return fmt.Sprintf("is %d bytes, at most %d", len(s), max)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case segment && (s == "." || s == ".."):
		return "may not be . or .."
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return "holds a control character"
		}
		if segment && r == '/' {
			return `holds the separator "/"`
		}
	}
	return ""
}

// ValidateItemKey checks a key: 1–256 bytes of UTF-8 without control
// characters ("/" is allowed in keys).
func ValidateItemKey(key string) error {
	if err := checkName(key, MaxItemKeyBytes, false); err != "" {
		return Invalid("key", "%s", err)
	}
	return nil
}

// String is the text form: the segments joined by "/".
func (ns Namespace) String() string { return strings.Join(ns, "/") }

// ParseNamespace reads the text form ("user/alice"); "" is the root.
func ParseNamespace(s string) (Namespace, error) {
	if s == "" {
		return Namespace{}, nil
	}
	ns := Namespace(strings.Split(s, "/"))
	if err := ns.ValidatePrefix(); err != nil {
		return nil, err
	}
	return ns, nil
}

// HasPrefix reports whether prefix is ns or one of its ancestors (segment
// by segment: {"user","al"} is not a prefix of {"user","alice"}).
func (ns Namespace) HasPrefix(prefix Namespace) bool {
	if len(prefix) > len(ns) {
		return false
	}
	for i, s := range prefix {
		if ns[i] != s {
			return false
		}
	}
	return true
}

// Item is one stored value.
type Item struct {
	Namespace Namespace `json:"namespace"`
	Key       string    `json:"key"`
	// Value is a JSON object, compacted.
	Value     json.RawMessage `json:"value"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	// Score is the relevance in [0,1] of a Search with a query.
	Score float64 `json:"score,omitempty"`
}

// PutRequest stores Value under (Namespace, Key), replacing what was there.
type PutRequest struct {
	Namespace Namespace       `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	// MaxEntries, when > 0, makes a put of a new key into a namespace that
	// already holds MaxEntries items fail with a *QuotaError (checked in
	// the same atomic step as the write). Set by the policy (GuardItems).
	MaxEntries int `json:"max_entries,omitempty"`
}

// Validate checks the namespace, the key and that Value is one JSON object
// of at most MaxItemValueBytes; it compacts Value.
func (r *PutRequest) Validate() error {
	if err := r.Namespace.Validate(); err != nil {
		return err
	}
	if err := ValidateItemKey(r.Key); err != nil {
		return err
	}
	v, err := CompactObject(r.Value)
	if err != nil {
		return err
	}
	if len(v) > MaxItemValueBytes {
		return &QuotaError{Limit: "value bytes", Max: MaxItemValueBytes, Got: len(v)}
	}
	r.Value = v
	return nil
}

// CompactObject returns v compacted, or an error naming the field "value"
// when v is not exactly one JSON object.
func CompactObject(v json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || t[0] != '{' {
		return nil, Invalid("value", "must be a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return nil, Invalid("value", "is not valid JSON")
	}
	return b.Bytes(), nil
}

// PutResult is what Put stored, and the item it replaced (nil when the key
// was new).
type PutResult struct {
	Item     Item  `json:"item"`
	Previous *Item `json:"previous,omitempty"`
}

// ListItemsRequest pages through the items whose namespace has Prefix.
type ListItemsRequest struct {
	Prefix Namespace `json:"prefix"`
	// Limit is 1–MaxItemListSize (0 → DefaultItemListSize).
	Limit int `json:"limit,omitempty"`
	// Cursor is a page's NextCursor ("" → from the start).
	Cursor string `json:"cursor,omitempty"`
}

// Validate checks the prefix, the limit and the cursor.
func (r ListItemsRequest) Validate() error {
	if err := r.Prefix.ValidatePrefix(); err != nil {
		return err
	}
	if r.Limit < 0 || r.Limit > MaxItemListSize {
		return Invalid("limit", "must be 0–%d", MaxItemListSize)
	}
	if r.Cursor != "" {
		if _, err := DecodeItemCursor(r.Cursor); err != nil {
			return err
		}
	}
	return nil
}

// ItemPage is one page of List. NextCursor is "" on the last page.
type ItemPage struct {
	Items      []Item `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// SearchItemsRequest finds items whose namespace has Prefix.
type SearchItemsRequest struct {
	Prefix Namespace `json:"prefix"`
	// Query ranks the items by relevance (lexical through package
	// retrieval; semantic or hybrid where an Embedder is configured).
	// Empty: the items in List order.
	Query string `json:"query,omitempty"`
	// Filter keeps the items whose value has each of these top-level
	// fields equal (as JSON) to the given value.
	Filter map[string]json.RawMessage `json:"filter,omitempty"`
	// Limit is 1–MaxItemTopK (0 → DefaultItemTopK).
	Limit int `json:"limit,omitempty"`
}

// Validate checks the prefix and the limit.
func (r SearchItemsRequest) Validate() error {
	if err := r.Prefix.ValidatePrefix(); err != nil {
		return err
	}
	if r.Limit < 0 || r.Limit > MaxItemTopK {
		return Invalid("limit", "must be 0–%d", MaxItemTopK)
	}
	return nil
}

// ItemStore is the namespaced store. Implementations: plugins/inmem,
// plugins/embedded, plugins/redis, plugins/http; every one passes
// coretest.RunItems.
//
// The contract, for every method:
//   - ctx comes first; a cancelled ctx makes the method return promptly
//     with an error wrapping ctx.Err().
//   - Safe for concurrent use. Concurrent puts of one key: the last writer
//     wins and the stored value is always one whole put's value.
//   - Errors wrap the sentinels of this package: ErrInvalid (a *FieldError)
//     for a bad namespace, key, value or limit; a *QuotaError for a limit;
//     ErrForbidden for a namespace a policy denies; ErrUnavailable.
//   - Error messages name namespaces, keys and limits, never values.
//   - Order: items sort by ItemID (namespace segment by segment, the
//     items of a namespace before those of its children, then key), bytes
//     compared.
type ItemStore interface {
	// Put stores the value, replacing any item with the same namespace and
	// key (created_at kept, updated_at set).
	Put(ctx context.Context, req PutRequest) (PutResult, error)
	// Get returns the item and true, or false when there is none (not an
	// error).
	Get(ctx context.Context, ns Namespace, key string) (Item, bool, error)
	// List returns the items under req.Prefix in order, a page at a time.
	List(ctx context.Context, req ListItemsRequest) (ItemPage, error)
	// Search returns at most req.Limit items under req.Prefix that match
	// req.Filter: by relevance (Score, then order) with a query, in order
	// without one.
	Search(ctx context.Context, req SearchItemsRequest) ([]Item, error)
	// Delete removes the item and returns it; false when there was none.
	Delete(ctx context.Context, ns Namespace, key string) (Item, bool, error)
	// Clear removes every item under prefix (a non-empty prefix: the root
	// is never cleared at once) and returns how many it removed.
	Clear(ctx context.Context, prefix Namespace) (int, error)
}

// ItemsProvider is implemented by a MemoryPlugin that also holds a
// namespaced store (the embedded, Redis and HTTP stores).
type ItemsProvider interface {
	Items() ItemStore
}

// QuotaError is a store limit a request would exceed. It wraps
// ErrTooLarge; the message names the limit ("quota exceeded: max entries
// per namespace 100").
type QuotaError struct {
	Limit string // "value bytes", "entries per namespace"
	Max   int
	Got   int // the value's size; 0 when not known
}

func (e *QuotaError) Error() string {
	if e.Got > 0 {
		return fmt.Sprintf("quota exceeded: %s %d over max %d", e.Limit, e.Got, e.Max)
	}
	return fmt.Sprintf("quota exceeded: max %s %d", e.Limit, e.Max)
}

// Unwrap makes errors.Is(err, ErrTooLarge) true.
func (e *QuotaError) Unwrap() error { return ErrTooLarge }

// ItemID is the storage identity of (ns, key): each segment followed by
// 0x00, then 0x01 and the key. Segments and keys hold no control
// characters, so the encoding is unambiguous, the IDs of every item under
// a prefix share NamespacePrefixID(prefix) (a contiguous range in byte
// order), and an item sorts before the items of its namespace's children.
func ItemID(ns Namespace, key string) string {
	return NamespacePrefixID(ns) + "\x01" + key
}

// NamespacePrefixID is the common start of the IDs of every item whose
// namespace has prefix ("" for the root).
func NamespacePrefixID(prefix Namespace) string {
	n := 0
	for _, s := range prefix {
		n += len(s) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range prefix {
		b.WriteString(s)
		b.WriteByte(0)
	}
	return b.String()
}

// ParseItemID is the inverse of ItemID.
func ParseItemID(id string) (Namespace, string, error) {
	nsPart, key, ok := strings.Cut(id, "\x01")
	if !ok || !strings.HasSuffix(nsPart, "\x00") {
		return nil, "", Invalid("id", "is not an item id")
	}
	ns := Namespace(strings.Split(strings.TrimSuffix(nsPart, "\x00"), "\x00"))
	if err := ns.Validate(); err != nil {
		return nil, "", err
	}
	if err := ValidateItemKey(key); err != nil {
		return nil, "", err
	}
	return ns, key, nil
}

// EncodeItemCursor makes the cursor that continues after the item id.
func EncodeItemCursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// DecodeItemCursor returns the item id a cursor continues after.
func DecodeItemCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", Invalid("cursor", "is not a cursor of this store")
	}
	if _, _, err := ParseItemID(string(b)); err != nil {
		return "", Invalid("cursor", "is not a cursor of this store")
	}
	return string(b), nil
}

// MatchFilter reports whether the JSON object value has every field of
// filter equal to the filter's value (compared as decoded JSON).
func MatchFilter(value json.RawMessage, filter map[string]json.RawMessage) bool {
	if len(filter) == 0 {
		return true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(value, &obj) != nil {
		return false
	}
	for k, want := range filter {
		got, ok := obj[k]
		if !ok || !jsonEqual(got, want) {
			return false
		}
	}
	return true
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x) // maps marshal with sorted keys
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// ItemText is what lexical search reads of an item: its key and every
// string in its value (field names of the value excluded), one per line.
func ItemText(it Item) string {
	var b strings.Builder
	b.WriteString(it.Key)
	var v any
	if json.Unmarshal(it.Value, &v) == nil {
		appendStrings(&b, v)
	}
	return b.String()
}

func appendStrings(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		b.WriteByte('\n')
		b.WriteString(x)
	case []any:
		for _, e := range x {
			appendStrings(b, e)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			appendStrings(b, x[k])
		}
	}
}

// ItemListLimit is the effective page size of a List limit.
func ItemListLimit(n int) int {
	if n <= 0 {
		return DefaultItemListSize
	}
	return min(n, MaxItemListSize)
}

// ItemTopK is the effective result count of a Search limit.
func ItemTopK(n int) int {
	if n <= 0 {
		return DefaultItemTopK
	}
	return min(n, MaxItemTopK)
}
