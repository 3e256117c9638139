package hooks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TurnState is what a prompt hook leaves for the stop hook of the same
// turn: the run it opened and what the gatekeeper showed.
type TurnState struct {
	Host      Host   `json:"host"`
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id,omitempty"`
	RunID     string `json:"run_id"`
	ProjectID string `json:"project_id"`
	// Query is the prompt, redacted.
	Query string `json:"query"`
	// Shown are the ids rendered into the block.
	Shown []string `json:"shown"`
	// Block is the memory block as rendered (extraction must never copy it).
	Block string `json:"block,omitempty"`
	// Matches are the search's matches (id and receipt); WriteCandidate
	// is the gatekeeper's word on whether a new candidate may be written.
	Matches        []MatchRef `json:"matches"`
	WriteCandidate bool       `json:"write_candidate"`
	// Skipped is why memory was not searched; MemoryErr the search error
	// memory failed open on, MemoryUnavailable whether it was the store
	// being unavailable (a store with an outbox still takes the records).
	Skipped           string    `json:"skipped,omitempty"`
	MemoryErr         string    `json:"memory_error,omitempty"`
	MemoryUnavailable bool      `json:"memory_unavailable,omitempty"`
	Created           time.Time `json:"created"`
}

// MatchRef is one search match as the stop hook needs it.
type MatchRef struct {
	QAID      string `json:"qa_id"`
	ReceiptID string `json:"receipt_id,omitempty"`
}

// States keeps turn states as one small file per (host, session, turn) in a
// directory: written atomically (temp file + rename), taken by the stop hook
// with a rename so that a turn is evaluated at most once even when two stop
// hooks race, and pruned by age and count.
type States struct {
	dir    string
	maxAge time.Duration
	max    int
	now    func() time.Time
}

// Default bounds of a States directory.
const (
	DefaultStateMaxAge = 24 * time.Hour
	DefaultStateMax    = 512
)

// NewStates returns the state directory dir (created on first Save).
func NewStates(dir string) *States {
	return &States{dir: dir, maxAge: DefaultStateMaxAge, max: DefaultStateMax, now: time.Now}
}

// Dir is the state directory.
func (s *States) Dir() string { return s.dir }

func (s *States) file(h Host, session, turn string) string {
	sum := sha256.Sum256([]byte(string(h) + "\x00" + session + "\x00" + turn))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// Save stores st, replacing the state of the same turn.
func (s *States) Save(st TurnState) error {
	if st.Created.IsZero() {
		st.Created = s.now()
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("turn state: %w", err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("turn state: %w", err)
	}
	path := s.file(st.Host, st.SessionID, st.TurnID)
	tmp, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("turn state: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("turn state: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("turn state: %w", err)
	}
	return nil
}

// Take removes and returns the state of a turn. ok is false when there is
// none (no prompt hook ran, it was already taken, or it expired).
func (s *States) Take(h Host, session, turn string) (st TurnState, ok bool, err error) {
	path := s.file(h, session, turn)
	claimed := path + ".taken-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(s.now().UnixNano(), 36)
	if err := os.Rename(path, claimed); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return st, false, nil
		}
		return st, false, fmt.Errorf("turn state: %w", err)
	}
	defer func() { _ = os.Remove(claimed) }()
	b, err := os.ReadFile(claimed)
	if err != nil {
		return st, false, fmt.Errorf("turn state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, false, fmt.Errorf("turn state %s: malformed: %v", filepath.Base(path), err)
	}
	if st.Host != h || st.SessionID != session || st.TurnID != turn {
		return TurnState{}, false, fmt.Errorf("turn state %s: belongs to another turn", filepath.Base(path))
	}
	if s.now().Sub(st.Created) > s.maxAge {
		return TurnState{}, false, nil
	}
	return st, true, nil
}

// Prune removes states older than the maximum age, leftovers of interrupted
// writes, and the oldest states beyond the maximum count.
func (s *States) Prune() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("turn state: %w", err)
	}
	type st struct {
		name string
		mod  time.Time
	}
	var keep []st
	now := s.now()
	var errs []error
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || e.IsDir() {
			continue
		}
		name := e.Name()
		stale := now.Sub(info.ModTime()) > s.maxAge
		leftover := (strings.HasPrefix(name, ".tmp-") || strings.Contains(name, ".taken-")) && now.Sub(info.ModTime()) > time.Minute
		if stale || leftover {
			if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".") {
			keep = append(keep, st{name, info.ModTime()})
		}
	}
	if len(keep) > s.max {
		slices.SortFunc(keep, func(a, b st) int { return a.mod.Compare(b.mod) })
		for _, k := range keep[:len(keep)-s.max] {
			if err := os.Remove(filepath.Join(s.dir, k.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("turn state: prune: %w", err)
	}
	return nil
}
