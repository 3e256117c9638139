package main

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/gatekeeper"
	"github.com/memex-dev/memex/service"
	"github.com/memex-dev/memex/trust"
)

// Config is the resolved configuration: defaults, then the user config
// file, then .memex.toml at the repo root, then MEMEX_* environment
// variables, then flags (docs/CONFIG.md lists every key).
type Config struct {
	// Files are the config files that were read, in order.
	Files []string
	// Warnings are problems that did not stop the load (the keys an
	// untrusted repository file may not set); setup prints them.
	Warnings []string

	Project string // [memory] project
	// ProjectFrom says where Project was set: "--project", "MEMEX_PROJECT"
	// or "config file <path>"; empty when nothing set it.
	ProjectFrom string
	Store       string // [memory] store

	// serving: the store is opened for memex serve, the team flavour of
	// the trust model (the creator's own reports do not count, SPEC §5.1)
	// whatever the store. Set by the serve command, never by a file.
	serving bool

	Engine engine.Config
	// Profile is the gatekeeper profile the [gatekeeper] knobs start from.
	Profile string

	Backend string // [run] backend
	Model   string // [run] model
	Verify  string // [run] verify
	Events  string // [run] events
	Timeout time.Duration

	HalfLife     time.Duration // [trust] half_life
	CandidateTTL time.Duration // [trust] candidate_ttl

	// APIKey is MEMEX_API_KEY: the bearer secret of http(s):// stores. It
	// comes from the environment only, never from a file, and is never
	// printed.
	APIKey string
	// OutboxDir is where an http(s):// store spools writes the service
	// could not take ($XDG_DATA_HOME/memex/outbox).
	OutboxDir string

	ServeAddr string         // [serve] addr
	Serve     service.Config // [serve] (keys, quotas, limits, receipts)

	// storeLockTimeout, when set, bounds how long opening the embedded
	// store waits for another process's lock (a hook must not hang).
	storeLockTimeout time.Duration

	// HooksEnabled is [hooks] enabled: false turns `memex hook` off (the
	// hooks then exit at once with no output). A repository's .memex.toml
	// may turn it off for its project.
	HooksEnabled bool

	// Scopes is [scopes]: the user id, the recall of scoped entries into
	// the memory block and the local store policy (docs/SCOPES.md).
	Scopes scopesConfig

	// Semantic is the optional reranking of [semantic] (off by default);
	// its API key is MEMEX_EMBED_API_KEY, from the environment only.
	Semantic semanticConfig

	// Distill is [distill]: distillation of passing runs by the agent CLI
	// (off by default: it spends the user's tokens; docs/MARKDOWN.md).
	Distill distillConfig
}

// distillConfig is the [distill] section.
type distillConfig struct {
	Enabled         bool
	Command         string // "" = the run's own backend
	Model           string // "" = the run's model
	Timeout         time.Duration
	MaxCandidates   int
	KeepTranscripts bool
}

// semanticConfig is the [semantic] section (docs/SEMANTIC.md).
type semanticConfig struct {
	Enabled    bool
	BaseURL    string
	Model      string
	APIKey     string
	Weight     float64
	Fusion     string
	Candidates int
	Timeout    time.Duration
	BatchSize  int
	Dimensions int
}

// DefaultConfig is the configuration with no file, env or flag.
func DefaultConfig() Config {
	return Config{
		Engine:       engine.DefaultConfig(),
		HooksEnabled: true,
		Profile:      "default",
		Backend:      "claude",
		HalfLife:     90 * 24 * time.Hour,
		CandidateTTL: 30 * 24 * time.Hour,
		ServeAddr:    service.DefaultAddr,
		Serve:        service.DefaultConfig(),
		Scopes:       defaultScopesConfig(),
		Semantic:     semanticConfig{Weight: 0.3, Fusion: "linear", Candidates: 50, Timeout: time.Second, BatchSize: 64},
		Distill:      distillConfig{Timeout: 120 * time.Second, MaxCandidates: 5},
	}
}

// fileConfig is one TOML file. Pointers tell "absent" from "zero".
type fileConfig struct {
	Memory struct {
		Project     *string   `toml:"project"`
		Store       *string   `toml:"store"`
		Timeout     *duration `toml:"timeout"`
		SearchLimit *int      `toml:"search_limit"`
		MinScore    *float64  `toml:"min_score"`
		Enabled     *bool     `toml:"enabled"`
		SkipL0      *bool     `toml:"skip_l0"`
	} `toml:"memory"`
	Scopes     scopesFile `toml:"scopes"`
	Gatekeeper struct {
		Profile                  *string   `toml:"profile"`
		ActiveStatuses           *[]string `toml:"active_statuses"`
		MinScore                 *float64  `toml:"min_score"`
		MaxInject                *int      `toml:"max_inject"`
		MinLevelInject           *int      `toml:"min_level_inject"`
		MinLevelFallback         *int      `toml:"min_level_fallback"`
		MinTrustShow             *float64  `toml:"min_trust_show"`
		BlockIfConsecutiveFailGE *int      `toml:"block_if_consecutive_fail_ge"`
		SkipIfTop1ScoreGE        *float64  `toml:"skip_if_top1_score_ge"`
		Order                    *string   `toml:"order"`
		ExploreSlots             *int      `toml:"explore_slots"`
		Fallback                 *bool     `toml:"fallback"`
		ExcludeStale             *bool     `toml:"exclude_stale"`
	} `toml:"gatekeeper"`
	PromptInject struct {
		MaxItems       *int    `toml:"max_items"`
		MaxAnswerChars *int    `toml:"max_answer_chars"`
		MaxBlockChars  *int    `toml:"max_block_chars"`
		Placement      *string `toml:"placement"`
		IncludeMeta    *bool   `toml:"include_meta"`
	} `toml:"prompt_inject"`
	CandidateExtract struct {
		Enabled           *bool `toml:"enabled"`
		MaxAnswerChars    *int  `toml:"max_answer_chars"`
		MinAnswerChars    *int  `toml:"min_answer_chars"`
		MaxSteps          *int  `toml:"max_steps"`
		StrictSecretBlock *bool `toml:"strict_secret_block"`
	} `toml:"candidate_extract"`
	Run struct {
		Backend *string   `toml:"backend"`
		Model   *string   `toml:"model"`
		Verify  *string   `toml:"verify"`
		Events  *string   `toml:"events"`
		Timeout *duration `toml:"timeout"`
	} `toml:"run"`
	Trust struct {
		HalfLife        *duration `toml:"half_life"`
		CandidateTTL    *duration `toml:"candidate_ttl"`
		RequireReceipts *bool     `toml:"require_receipts"`
	} `toml:"trust"`
	Serve serveFile `toml:"serve"`
	Hooks struct {
		Enabled *bool `toml:"enabled"`
	} `toml:"hooks"`
	Distill struct {
		Enabled         *bool     `toml:"enabled"`
		Command         *string   `toml:"command"`
		Model           *string   `toml:"model"`
		Timeout         *duration `toml:"timeout"`
		MaxCandidates   *int      `toml:"max_candidates"`
		KeepTranscripts *bool     `toml:"keep_transcripts"`
	} `toml:"distill"`
	Semantic struct {
		Enabled    *bool     `toml:"enabled"`
		BaseURL    *string   `toml:"base_url"`
		Model      *string   `toml:"model"`
		Weight     *float64  `toml:"weight"`
		Fusion     *string   `toml:"fusion"`
		Candidates *int      `toml:"candidates"`
		Timeout    *duration `toml:"timeout"`
		BatchSize  *int      `toml:"batch_size"`
		Dimensions *int      `toml:"dimensions"`
	} `toml:"semantic"`
}

// serveFile is the [serve] section (memex serve; docs/CONFIG.md).
type serveFile struct {
	Addr            *string              `toml:"addr"`
	Keys            *[]serveKeyFile      `toml:"keys"`
	Quota           quotaFile            `toml:"quota"`
	ProjectQuotas   map[string]quotaFile `toml:"project_quotas"`
	BodyLimit       *int64               `toml:"body_limit"`
	RateLimit       *float64             `toml:"rate_limit"`
	RateBurst       *int                 `toml:"rate_burst"`
	ExpiryInterval  *duration            `toml:"expiry_interval"`
	ExpiryBatch     *int                 `toml:"expiry_batch"`
	RequireReceipts *bool                `toml:"require_receipts"`
	ReceiptTTL      *duration            `toml:"receipt_ttl"`
	IdempotencyTTL  *duration            `toml:"idempotency_ttl"`
	IdempotencyMax  *int64               `toml:"idempotency_max_bytes"`
	RequestTimeout  *duration            `toml:"request_timeout"`
	ShutdownTimeout *duration            `toml:"shutdown_timeout"`
	StatsInterval   *duration            `toml:"stats_interval"`
	PublicMetrics   *bool                `toml:"public_metrics"`
	Store           struct {
		MaxEntriesPerNamespace *int `toml:"max_entries_per_namespace"`
		MaxValueBytes          *int `toml:"max_value_bytes"`
	} `toml:"store"`
}

// serveKeyFile is one [[serve.keys]] table.
type serveKeyFile struct {
	ID           string   `toml:"id"`
	SecretSHA256 string   `toml:"secret_sha256"`
	Role         string   `toml:"role"`
	Projects     []string `toml:"projects"`
	Trusted      bool     `toml:"trusted"`
	StoreRead    []string `toml:"store_read"`
	StoreWrite   []string `toml:"store_write"`
}

type quotaFile struct {
	MaxQAs         *int `toml:"max_qas"`
	MaxAnswerBytes *int `toml:"max_answer_bytes"`
}

func (q quotaFile) apply(dst *service.Quota) {
	set(&dst.MaxQAs, q.MaxQAs)
	set(&dst.MaxAnswerBytes, q.MaxAnswerBytes)
}

// apply sets the [serve] keys of one file onto cfg. API keys are refused in
// a repository's .memex.toml: whoever can commit to a repository must not
// be able to add keys to a server started inside it.
func (sf *serveFile) apply(cfg *Config, path string) error {
	bad := func(key, msg string) error { return fmt.Errorf("config %s: %s: %s", path, key, msg) }
	sc := &cfg.Serve
	set(&cfg.ServeAddr, sf.Addr)
	set(&sc.Store.MaxEntriesPerNamespace, sf.Store.MaxEntriesPerNamespace)
	set(&sc.Store.MaxValueBytes, sf.Store.MaxValueBytes)
	if sc.Store.MaxEntriesPerNamespace < 0 || sc.Store.MaxValueBytes < 0 {
		return bad("serve.store", "max_entries_per_namespace and max_value_bytes must be ≥ 0")
	}
	if sf.Keys != nil {
		if filepath.Base(path) == ".memex.toml" {
			return bad("serve.keys", "API keys may not be set in a repository's .memex.toml (use the user config or --config)")
		}
		sc.Keys = nil
		for _, k := range *sf.Keys {
			sc.Keys = append(sc.Keys, service.Key{ID: k.ID, SecretSHA256: strings.ToLower(k.SecretSHA256), Role: k.Role, Projects: k.Projects, Trusted: k.Trusted,
				StoreRead: k.StoreRead, StoreWrite: k.StoreWrite})
		}
	}
	sf.Quota.apply(&sc.Quota)
	if sf.ProjectQuotas != nil {
		sc.ProjectQuotas = map[string]service.Quota{}
		for p, q := range sf.ProjectQuotas {
			var sq service.Quota
			q.apply(&sq)
			sc.ProjectQuotas[p] = sq
		}
	}
	set(&sc.BodyLimit, sf.BodyLimit)
	set(&sc.RateLimit, sf.RateLimit)
	set(&sc.RateBurst, sf.RateBurst)
	setDuration(&sc.ExpiryInterval, sf.ExpiryInterval)
	set(&sc.ExpiryBatch, sf.ExpiryBatch)
	set(&sc.RequireReceipts, sf.RequireReceipts)
	setDuration(&sc.ReceiptTTL, sf.ReceiptTTL)
	setDuration(&sc.IdempotencyTTL, sf.IdempotencyTTL)
	set(&sc.IdempotencyMaxBytes, sf.IdempotencyMax)
	setDuration(&sc.RequestTimeout, sf.RequestTimeout)
	setDuration(&sc.ShutdownTimeout, sf.ShutdownTimeout)
	setDuration(&sc.StatsInterval, sf.StatsInterval)
	set(&sc.PublicMetrics, sf.PublicMetrics)
	if sc.BodyLimit <= 0 {
		return bad("serve.body_limit", "must be > 0 bytes")
	}
	if sc.RateLimit < 0 || sc.RateBurst < 0 {
		return bad("serve.rate_limit", "rate_limit and rate_burst must be ≥ 0")
	}
	if sc.ExpiryBatch < 1 || sc.ExpiryBatch > 1000 {
		return bad("serve.expiry_batch", "must be between 1 and 1000")
	}
	return nil
}

func setDuration(dst *time.Duration, src *duration) {
	if src != nil {
		*dst = time.Duration(*src)
	}
}

// duration is a TOML string like "2s", "1h30m" or "90d".
type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

// parseDuration is time.ParseDuration plus a "d" (day) suffix.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("invalid duration %q (examples: 2s, 500ms, 1h, 90d)", s)
		}
		return time.Duration(f * float64(24*time.Hour)), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid duration %q (examples: 2s, 500ms, 1h, 90d)", s)
	}
	return v, nil
}

// configFiles lists the config files to read, in order. explicit (from
// --config or MEMEX_CONFIG) replaces the user file and must exist.
func configFiles(getenv func(string) string, cwd, explicit string) (files []string, mustExist map[string]bool) {
	mustExist = map[string]bool{}
	if explicit != "" {
		files = append(files, explicit)
		mustExist[explicit] = true
	} else if dir := userConfigDir(getenv); dir != "" {
		files = append(files, filepath.Join(dir, "memex", "config.toml"))
	}
	if root := gitRoot(cwd); root != "" {
		files = append(files, filepath.Join(root, ".memex.toml"))
	}
	return files, mustExist
}

func userConfigDir(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config")
	}
	return ""
}

// dataDir is $XDG_DATA_HOME/memex, else ~/.local/share/memex.
func dataDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "memex"), nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "memex"), nil
	}
	return "", errors.New("cannot find a data directory: set XDG_DATA_HOME or HOME, or pass --store")
}

// loadConfig resolves the configuration for one invocation.
func loadConfig(getenv func(string) string, cwd string, g *globalFlags) (Config, error) {
	cfg := DefaultConfig()
	explicit := g.config
	if explicit == "" {
		explicit = getenv("MEMEX_CONFIG")
	}
	files, must := configFiles(getenv, cwd, explicit)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && !must[f] {
				continue
			}
			return cfg, fmt.Errorf("config %s: %w", f, err)
		}
		if must[f] {
			err = applyFile(&cfg, f, b) // the user's own choice
		} else if root := gitRoot(cwd); root != "" && f == filepath.Join(root, ".memex.toml") {
			var ignored []string
			ignored, err = applyRepoFile(&cfg, getenv, f, b)
			if len(ignored) > 0 {
				cfg.Warnings = append(cfg.Warnings, ignoredWarning(f, ignored))
			}
		} else {
			err = applyFile(&cfg, f, b)
		}
		if err != nil {
			return cfg, err
		}
		cfg.Files = append(cfg.Files, f)
	}
	if err := applyEnv(&cfg, getenv); err != nil {
		return cfg, err
	}
	if g.project != "" {
		cfg.Project, cfg.ProjectFrom = g.project, "--project"
	}
	if g.store != "" {
		cfg.Store = g.store
	}
	return cfg, nil
}

// applyFile decodes one TOML file onto cfg. Unknown keys and malformed
// TOML are errors naming the file, the key and the line.
func applyFile(cfg *Config, path string, b []byte) error {
	var fc fileConfig
	md, err := toml.Decode(string(b), &fc)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return fmt.Errorf("config %s:%d: malformed TOML: %s", path, perr.Position.Line, perr.Message)
		}
		return fmt.Errorf("config %s: %v", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		line := keyLine(string(b), k)
		return fmt.Errorf("config %s:%d: unknown key %q", path, line, k.String())
	}
	return fc.apply(cfg, path, string(b))
}

// keyLine finds the line of key k in a TOML text (1-based; 0 if not found):
// the line defining it inside its table, else the table header.
func keyLine(text string, k toml.Key) int {
	want := strings.Join(k, ".")
	table := ""
	header := 0
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			name := strings.Trim(strings.TrimSpace(strings.SplitN(line, "#", 2)[0]), "[] ")
			table = unquoteKey(name)
			if table == want && header == 0 {
				header = i + 1
			}
			continue
		}
		eq := strings.Index(line, "=")
		if eq <= 0 {
			continue
		}
		key := unquoteKey(strings.TrimSpace(line[:eq]))
		full := key
		if table != "" {
			full = table + "." + key
		}
		if full == want || strings.HasPrefix(want, full+".") {
			return i + 1
		}
	}
	return header
}

func unquoteKey(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// apply sets cfg from the decoded file; text is the file as written, so
// an invalid value's error names its line.
func (fc *fileConfig) apply(cfg *Config, path, text string) error {
	bad := func(key, msg string) error {
		if line := keyLine(text, toml.Key(strings.Split(key, "."))); line > 0 {
			return fmt.Errorf("config %s:%d: %s: %s", path, line, key, msg)
		}
		return fmt.Errorf("config %s: %s: %s", path, key, msg)
	}
	// between checks a value the file sets against its valid range.
	between := func(key string, v *float64, lo, hi float64) error {
		if v != nil && !(*v >= lo && *v <= hi) {
			return bad(key, fmt.Sprintf("%g is out of range: must be between %g and %g", *v, lo, hi))
		}
		return nil
	}
	betweenInt := func(key string, v *int, lo, hi int) error {
		if v != nil && (*v < lo || *v > hi) {
			return bad(key, fmt.Sprintf("%d is out of range: must be between %d and %d", *v, lo, hi))
		}
		return nil
	}
	set(&cfg.HooksEnabled, fc.Hooks.Enabled)
	if err := fc.applyDistill(cfg, path); err != nil {
		return err
	}
	m := fc.Memory
	if m.Project != nil {
		cfg.Project, cfg.ProjectFrom = *m.Project, "config file "+path
	}
	set(&cfg.Store, m.Store)
	if m.Timeout != nil {
		cfg.Engine.MemoryTimeout = time.Duration(*m.Timeout)
	}
	set(&cfg.Engine.SearchLimit, m.SearchLimit)
	set(&cfg.Engine.MinScore, m.MinScore)
	set(&cfg.Engine.Enabled, m.Enabled)
	set(&cfg.Engine.SkipL0, m.SkipL0)
	if err := cmp.Or(
		betweenInt("memory.search_limit", m.SearchLimit, 1, core.MaxSearchLimit),
		between("memory.min_score", m.MinScore, 0, 1),
	); err != nil {
		return err
	}

	g := fc.Gatekeeper
	gk := &cfg.Engine.Gatekeeper
	if g.Profile != nil {
		switch *g.Profile {
		case "default":
			*gk = gatekeeper.DefaultConfig()
		case "compat":
			*gk = gatekeeper.CompatConfig()
		default:
			return bad("gatekeeper.profile", `must be "default" or "compat"`)
		}
		cfg.Profile = *g.Profile
	}
	if g.ActiveStatuses != nil {
		gk.ActiveStatuses = nil
		for _, s := range *g.ActiveStatuses {
			st, err := core.ParseStatus(s)
			if err != nil {
				return bad("gatekeeper.active_statuses", err.Error())
			}
			gk.ActiveStatuses = append(gk.ActiveStatuses, st)
		}
	}
	if err := cmp.Or(
		between("gatekeeper.min_score", g.MinScore, 0, 1),
		between("gatekeeper.min_trust_show", g.MinTrustShow, 0, 1),
		betweenInt("gatekeeper.min_level_inject", g.MinLevelInject, 0, trust.MaxLevel),
		betweenInt("gatekeeper.min_level_fallback", g.MinLevelFallback, 0, trust.MaxLevel),
		betweenInt("gatekeeper.block_if_consecutive_fail_ge", g.BlockIfConsecutiveFailGE, 0, math.MaxInt32),
	); err != nil {
		return err
	}
	set(&gk.MinScore, g.MinScore)
	set(&gk.MaxInject, g.MaxInject)
	set(&gk.MinLevelInject, g.MinLevelInject)
	set(&gk.MinLevelFallback, g.MinLevelFallback)
	set(&gk.MinTrustShow, g.MinTrustShow)
	set(&gk.BlockIfConsecutiveFailGE, g.BlockIfConsecutiveFailGE)
	set(&gk.SkipIfTop1ScoreGE, g.SkipIfTop1ScoreGE)
	set(&gk.Order, g.Order)
	set(&gk.ExploreSlots, g.ExploreSlots)
	set(&gk.Fallback, g.Fallback)
	set(&gk.ExcludeStale, g.ExcludeStale)
	if gk.Order != "trust" && gk.Order != "level_first" {
		return bad("gatekeeper.order", `must be "trust" or "level_first"`)
	}
	if gk.MaxInject < 0 || gk.ExploreSlots < 0 {
		return bad("gatekeeper", "max_inject and explore_slots must be ≥ 0")
	}

	p := fc.PromptInject
	set(&gk.MaxItems, p.MaxItems)
	set(&gk.MaxAnswerChars, p.MaxAnswerChars)
	set(&gk.MaxBlockChars, p.MaxBlockChars)
	set(&gk.Placement, p.Placement)
	set(&gk.IncludeMeta, p.IncludeMeta)
	if gk.Placement != "user" && gk.Placement != "system" {
		return bad("prompt_inject.placement", `must be "user" or "system"`)
	}

	c := fc.CandidateExtract
	set(&cfg.Engine.Candidates, c.Enabled)
	set(&cfg.Engine.Extract.MaxAnswerChars, c.MaxAnswerChars)
	set(&cfg.Engine.Extract.MinAnswerChars, c.MinAnswerChars)
	set(&cfg.Engine.Extract.MaxSteps, c.MaxSteps)
	set(&cfg.Engine.Extract.StrictSecretBlock, c.StrictSecretBlock)

	r := fc.Run
	set(&cfg.Backend, r.Backend)
	set(&cfg.Model, r.Model)
	set(&cfg.Verify, r.Verify)
	set(&cfg.Events, r.Events)
	if r.Timeout != nil {
		cfg.Timeout = time.Duration(*r.Timeout)
	}

	if fc.Trust.HalfLife != nil {
		cfg.HalfLife = time.Duration(*fc.Trust.HalfLife)
	}
	if fc.Trust.CandidateTTL != nil {
		cfg.CandidateTTL = time.Duration(*fc.Trust.CandidateTTL)
	}
	set(&cfg.Serve.RequireReceipts, fc.Trust.RequireReceipts)

	sm := fc.Semantic
	set(&cfg.Semantic.Enabled, sm.Enabled)
	set(&cfg.Semantic.BaseURL, sm.BaseURL)
	set(&cfg.Semantic.Model, sm.Model)
	set(&cfg.Semantic.Weight, sm.Weight)
	set(&cfg.Semantic.Fusion, sm.Fusion)
	set(&cfg.Semantic.Candidates, sm.Candidates)
	set(&cfg.Semantic.BatchSize, sm.BatchSize)
	set(&cfg.Semantic.Dimensions, sm.Dimensions)
	if sm.Timeout != nil {
		cfg.Semantic.Timeout = time.Duration(*sm.Timeout)
	}
	if err := fc.Scopes.apply(cfg, path); err != nil {
		return err
	}
	return fc.Serve.apply(cfg, path)
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// envKeys are the MEMEX_* variables memex reads (docs/CONFIG.md).
func envKeys() []string {
	return []string{
		"MEMEX_CONFIG", "MEMEX_STORE", "MEMEX_PROJECT", "MEMEX_BACKEND", "MEMEX_MODEL", "MEMEX_VERIFY",
		"MEMEX_EVENTS", "MEMEX_MEMORY_TIMEOUT", "MEMEX_MEMORY_ENABLED", "MEMEX_GATEKEEPER_PROFILE",
		"MEMEX_API_KEY", "MEMEX_EMBED_API_KEY", "MEMEX_USER", "MEMEX_SESSION",
	}
}

func applyEnv(cfg *Config, getenv func(string) string) error {
	str := map[string]*string{
		"MEMEX_STORE": &cfg.Store, "MEMEX_PROJECT": &cfg.Project, "MEMEX_BACKEND": &cfg.Backend,
		"MEMEX_MODEL": &cfg.Model, "MEMEX_VERIFY": &cfg.Verify, "MEMEX_EVENTS": &cfg.Events,
	}
	for k, p := range str {
		if v := getenv(k); v != "" {
			*p = v
		}
	}
	if getenv("MEMEX_PROJECT") != "" {
		cfg.ProjectFrom = "MEMEX_PROJECT"
	}
	if v := getenv("MEMEX_USER"); v != "" {
		cfg.Scopes.User = v
	}
	cfg.Scopes.Session = getenv("MEMEX_SESSION")
	cfg.APIKey = getenv("MEMEX_API_KEY")
	cfg.Semantic.APIKey = getenv("MEMEX_EMBED_API_KEY")
	if dir, err := dataDir(getenv); err == nil {
		cfg.OutboxDir = filepath.Join(dir, "outbox")
	}
	if v := getenv("MEMEX_MEMORY_TIMEOUT"); v != "" {
		d, err := parseDuration(v)
		if err != nil {
			return fmt.Errorf("MEMEX_MEMORY_TIMEOUT: %w", err)
		}
		cfg.Engine.MemoryTimeout = d
	}
	if v := getenv("MEMEX_MEMORY_ENABLED"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("MEMEX_MEMORY_ENABLED: must be true or false")
		}
		cfg.Engine.Enabled = b
	}
	switch v := getenv("MEMEX_GATEKEEPER_PROFILE"); v {
	case "":
	case "default":
		cfg.Engine.Gatekeeper, cfg.Profile = gatekeeper.DefaultConfig(), v
	case "compat":
		cfg.Engine.Gatekeeper, cfg.Profile = gatekeeper.CompatConfig(), v
	default:
		return fmt.Errorf(`MEMEX_GATEKEEPER_PROFILE: must be "default" or "compat"`)
	}
	return nil
}

// storeURL is the configured store, or the default embedded file (its
// directory created 0700).
func (cfg Config) storeURL(getenv func(string) string) (string, error) {
	if cfg.Store != "" {
		return cfg.Store, nil
	}
	dir, err := dataDir(getenv)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	return "file://" + filepath.Join(dir, "memex.db"), nil
}

// applyDistill sets [distill]. A repository's .memex.toml may turn
// distillation off but never on, and may not name its command: whoever can
// commit to a repository must not be able to spend its users' tokens or run
// a program of their choosing after every run.
func (fc *fileConfig) applyDistill(cfg *Config, path string) error {
	d := fc.Distill
	bad := func(key, msg string) error { return fmt.Errorf("config %s: distill.%s: %s", path, key, msg) }
	if filepath.Base(path) == ".memex.toml" {
		if d.Enabled != nil && *d.Enabled {
			return bad("enabled", "a repository's .memex.toml may turn distillation off, not on (it spends your tokens; use the user config)")
		}
		if d.Command != nil || d.Model != nil {
			return bad("command", "may not be set in a repository's .memex.toml (use the user config or --config)")
		}
	}
	set(&cfg.Distill.Enabled, d.Enabled)
	set(&cfg.Distill.Command, d.Command)
	set(&cfg.Distill.Model, d.Model)
	setDuration(&cfg.Distill.Timeout, d.Timeout)
	set(&cfg.Distill.MaxCandidates, d.MaxCandidates)
	set(&cfg.Distill.KeepTranscripts, d.KeepTranscripts)
	if cfg.Distill.Timeout <= 0 {
		return bad("timeout", "must be > 0")
	}
	if cfg.Distill.MaxCandidates < 1 || cfg.Distill.MaxCandidates > 20 {
		return bad("max_candidates", "must be between 1 and 20")
	}
	return nil
}
