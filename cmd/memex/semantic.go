package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/semantic"
)

// withSemantic wraps store with the optional semantic reranking of
// [semantic] (docs/SEMANTIC.md). Off by default; a remote service
// (http(s):// stores) reranks on its side, so it is never wrapped. The
// wrapper fails open: an embedder error leaves the lexical order.
func withSemantic(store core.MemoryPlugin, storeURL string, c semanticConfig, log *slog.Logger) (core.MemoryPlugin, error) {
	if !c.Enabled || store == nil || c.Weight == 0 || strings.HasPrefix(storeURL, "http://") || strings.HasPrefix(storeURL, "https://") {
		return store, nil
	}
	fusion, err := semantic.ParseFusion(c.Fusion)
	if err != nil {
		return nil, fmt.Errorf("config [semantic]: %w", err)
	}
	e, err := semantic.NewOpenAI(semantic.Config{BaseURL: c.BaseURL, Model: c.Model, APIKey: c.APIKey,
		Timeout: c.Timeout, BatchSize: c.BatchSize, Dimensions: c.Dimensions}, semantic.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("config [semantic]: %w", err)
	}
	h, err := semantic.NewHybrid(e, semantic.HybridConfig{Weight: c.Weight, Fusion: fusion, Candidates: c.Candidates, Timeout: c.Timeout},
		semantic.WithHybridLogger(log))
	if err != nil {
		return nil, fmt.Errorf("config [semantic]: %w", err)
	}
	return semantic.Wrap(store, h), nil
}
