package service

import (
	"encoding/hex"
	"fmt"
	"path"
	"time"
)

// Roles of an API key.
const (
	RoleAgent = "agent"
	RoleAdmin = "admin"
)

// Defaults of Config (DefaultConfig).
const (
	DefaultAddr           = "127.0.0.1:8080"
	DefaultBodyLimit      = 1 << 20
	DefaultExpiryInterval = 15 * time.Minute
	DefaultExpiryBatch    = 200
	DefaultReceiptTTL     = 7 * 24 * time.Hour
	DefaultIdempotencyTTL = 24 * time.Hour
	// DefaultIdempotencyMaxBytes bounds the response bodies the
	// idempotency cache holds.
	DefaultIdempotencyMaxBytes = 32 << 20
	DefaultRequestTimeout      = 30 * time.Second
	DefaultShutdownTimeout     = 10 * time.Second
	DefaultStatsInterval       = 30 * time.Second
	// DefaultMaxResponseBytes bounds the matches of one search answer.
	DefaultMaxResponseBytes = 4 << 20
	// MaxMetadataBytes bounds a candidate's metadata (as JSON).
	MaxMetadataBytes = 64 << 10
)

// Key is one API key of [[serve.keys]]. The secret itself is never stored:
// SecretSHA256 is the hex SHA-256 of the bearer secret.
type Key struct {
	ID           string   `toml:"id" json:"id"`
	SecretSHA256 string   `toml:"secret_sha256" json:"-"`
	Role         string   `toml:"role" json:"role"`
	Projects     []string `toml:"projects" json:"projects"`
	Trusted      bool     `toml:"trusted" json:"trusted"`
	// StoreRead and StoreWrite are the namespace patterns of the
	// namespaced store the key may read and write (core.ItemPolicy). nil:
	// its own user and conversation namespaces (user/<id>,
	// conversation/<id>), project/<p> for each of its project patterns,
	// and global (read; write for an admin); an admin key of every project
	// ("*") reaches every namespace.
	StoreRead  []string `toml:"store_read" json:"store_read,omitempty"`
	StoreWrite []string `toml:"store_write" json:"store_write,omitempty"`
}

// StoreQuota limits the namespaced store for every key. Zero: no limit
// (values stay under core.MaxItemValueBytes).
type StoreQuota struct {
	MaxEntriesPerNamespace int `toml:"max_entries_per_namespace" json:"max_entries_per_namespace"`
	MaxValueBytes          int `toml:"max_value_bytes" json:"max_value_bytes"`
}

// Quota limits one project. Zero means no limit.
type Quota struct {
	MaxQAs int `toml:"max_qas" json:"max_qas"`
	// MaxAnswerBytes bounds what a QA stores besides its question: the
	// answer, the summary, the tags and the metadata (as JSON) together.
	MaxAnswerBytes int `toml:"max_answer_bytes" json:"max_answer_bytes"`
}

// Config is the [serve] section.
type Config struct {
	// Keys are the API keys. Without keys New refuses unless InsecureLocal.
	Keys []Key
	// InsecureLocal makes every request act as the local admin ("local")
	// without a key. cmd/memex binds to loopback only in that mode.
	InsecureLocal bool
	// MaxResponseBytes bounds the matches of one search or inject answer:
	// matches past it are left out (at least one is kept).
	MaxResponseBytes int
	// Quota applies to every project; ProjectQuotas override it for the
	// projects a pattern matches (first match in sorted pattern order wins).
	Quota         Quota
	ProjectQuotas map[string]Quota
	// Store limits the namespaced store (/v1/store/…).
	Store StoreQuota
	// BodyLimit is the largest request body in bytes (413 above it).
	BodyLimit int64
	// RateLimit is each key's sustained requests per second, RateBurst its
	// bucket size; 0 disables rate limiting.
	RateLimit float64
	RateBurst int
	// ExpiryInterval is the period of the expiry job (negative disables it);
	// ExpiryBatch the records it may change per run.
	ExpiryInterval time.Duration
	ExpiryBatch    int
	// RequireReceipts stores reports without a valid receipt in the audit
	// log only, with weight 0 (SPEC §5.4, trust.require_receipts).
	RequireReceipts bool
	// ReceiptTTL is the window in which a receipt is accepted.
	ReceiptTTL time.Duration
	// IdempotencyTTL is how long an Idempotency-Key's response is replayed.
	IdempotencyTTL time.Duration
	// IdempotencyMaxBytes bounds the bytes of the responses kept for
	// replay; past it the oldest are forgotten (their retries run again,
	// and the store dedupes their event ids).
	IdempotencyMaxBytes int64
	// RequestTimeout bounds each request's store calls (503 after it).
	RequestTimeout time.Duration
	// ShutdownTimeout bounds graceful shutdown in Serve.
	ShutdownTimeout time.Duration
	// StatsInterval is how long the per-project trust and level gauges are
	// cached between scrapes.
	StatsInterval time.Duration
	// PublicMetrics serves /metrics without a key (default: admin key).
	PublicMetrics bool
}

// DefaultConfig is the configuration with no [serve] section.
func DefaultConfig() Config {
	return Config{
		BodyLimit:           DefaultBodyLimit,
		ExpiryInterval:      DefaultExpiryInterval,
		ExpiryBatch:         DefaultExpiryBatch,
		RequireReceipts:     true,
		ReceiptTTL:          DefaultReceiptTTL,
		IdempotencyTTL:      DefaultIdempotencyTTL,
		IdempotencyMaxBytes: DefaultIdempotencyMaxBytes,
		MaxResponseBytes:    DefaultMaxResponseBytes,
		RequestTimeout:      DefaultRequestTimeout,
		ShutdownTimeout:     DefaultShutdownTimeout,
		StatsInterval:       DefaultStatsInterval,
	}
}

// withDefaults fills zero durations and limits.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.BodyLimit <= 0 {
		c.BodyLimit = d.BodyLimit
	}
	if c.ExpiryInterval == 0 {
		c.ExpiryInterval = d.ExpiryInterval
	}
	if c.ExpiryBatch <= 0 {
		c.ExpiryBatch = d.ExpiryBatch
	}
	if c.ReceiptTTL <= 0 {
		c.ReceiptTTL = d.ReceiptTTL
	}
	if c.IdempotencyTTL <= 0 {
		c.IdempotencyTTL = d.IdempotencyTTL
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = d.MaxResponseBytes
	}
	if c.IdempotencyMaxBytes <= 0 {
		c.IdempotencyMaxBytes = d.IdempotencyMaxBytes
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = d.ShutdownTimeout
	}
	if c.StatsInterval <= 0 {
		c.StatsInterval = d.StatsInterval
	}
	if c.RateLimit > 0 && c.RateBurst <= 0 {
		c.RateBurst = max(1, int(c.RateLimit))
	}
	return c
}

// Validate checks the configuration; errors name the key (never a secret).
func (c Config) Validate() error {
	if len(c.Keys) == 0 && !c.InsecureLocal {
		return fmt.Errorf("serve: no API keys configured ([[serve.keys]]); add one with 'memex serve keys new' or pass --insecure-local")
	}
	if len(c.Keys) > 0 && c.InsecureLocal {
		// Keyless requests would be the local admin next to the keys that
		// were meant to limit them.
		return fmt.Errorf("serve: --insecure-local serves without keys, but %d API keys are configured ([[serve.keys]]): drop one or the other", len(c.Keys))
	}
	seen := map[string]bool{}
	for i, k := range c.Keys {
		name := fmt.Sprintf("serve.keys[%d]", i)
		if k.ID == "" {
			return fmt.Errorf("%s: id is required", name)
		}
		if seen[k.ID] {
			return fmt.Errorf("%s: duplicate id %q", name, k.ID)
		}
		seen[k.ID] = true
		if b, err := hex.DecodeString(k.SecretSHA256); err != nil || len(b) != 32 {
			return fmt.Errorf("%s (%s): secret_sha256 must be 64 hex digits (the SHA-256 of the secret)", name, k.ID)
		}
		if k.Role != RoleAgent && k.Role != RoleAdmin {
			return fmt.Errorf("%s (%s): role must be %q or %q", name, k.ID, RoleAgent, RoleAdmin)
		}
		if len(k.Projects) == 0 {
			return fmt.Errorf("%s (%s): projects is required (patterns such as \"acme-*\", \"global\")", name, k.ID)
		}
		for _, p := range k.Projects {
			if err := validPattern(p); err != nil {
				return fmt.Errorf("%s (%s): projects: %w", name, k.ID, err)
			}
		}
	}
	for p, q := range c.ProjectQuotas {
		if err := validPattern(p); err != nil {
			return fmt.Errorf("serve.project_quotas: %w", err)
		}
		if q.MaxQAs < 0 || q.MaxAnswerBytes < 0 {
			return fmt.Errorf("serve.project_quotas.%s: limits must be ≥ 0", p)
		}
	}
	if c.Quota.MaxQAs < 0 || c.Quota.MaxAnswerBytes < 0 {
		return fmt.Errorf("serve.quota: limits must be ≥ 0")
	}
	if c.RateLimit < 0 || c.RateBurst < 0 {
		return fmt.Errorf("serve: rate_limit and rate_burst must be ≥ 0")
	}
	if c.BodyLimit < 0 {
		return fmt.Errorf("serve: body_limit must be ≥ 0")
	}
	return nil
}

// validPattern checks a project pattern: a project id that may contain the
// wildcards * and ?.
func validPattern(p string) error {
	if p == "" {
		return fmt.Errorf("empty project pattern")
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("bad project pattern %q", p)
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '*' || r == '?') {
			return fmt.Errorf("project pattern %q: only [a-z0-9_-] and the wildcards * and ?", p)
		}
	}
	return nil
}

// quotaFor returns the quota of project.
func (c Config) quotaFor(project string) Quota {
	if q, ok := c.ProjectQuotas[project]; ok {
		return q
	}
	best := ""
	for p := range c.ProjectQuotas {
		if ok, _ := path.Match(p, project); ok && (best == "" || p < best) {
			best = p
		}
	}
	if best != "" {
		return c.ProjectQuotas[best]
	}
	return c.Quota
}
