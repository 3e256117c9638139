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
	e, err := newEmbedder(c, log)
	if err != nil {
		return nil, err
	}
	h, err := semantic.NewHybrid(e, semantic.HybridConfig{Weight: c.Weight, Fusion: fusion, Candidates: c.Candidates, Timeout: c.Timeout},
		semantic.WithHybridLogger(log))
	if err != nil {
		return nil, fmt.Errorf("config [semantic]: %w", err)
	}
	return semantic.Wrap(store, h), nil
}

// newEmbedder is the embedder of [semantic] (the OpenAI-compatible client).
func newEmbedder(c semanticConfig, log *slog.Logger) (semantic.Embedder, error) {
	e, err := semantic.NewOpenAI(semantic.Config{BaseURL: c.BaseURL, Model: c.Model, APIKey: c.APIKey,
		Timeout: c.Timeout, BatchSize: c.BatchSize, Dimensions: c.Dimensions}, semantic.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("config [semantic]: %w", err)
	}
	return e, nil
}

// withSemanticItems makes the namespaced store's search hybrid when
// [semantic] is on (docs/SCOPES.md); a remote service searches on its side.
func withSemanticItems(st core.ItemStore, storeURL string, c semanticConfig, log *slog.Logger) core.ItemStore {
	if !c.Enabled || c.Weight <= 0 || c.Weight > 1 || strings.HasPrefix(storeURL, "http://") || strings.HasPrefix(storeURL, "https://") {
		return st
	}
	e, err := newEmbedder(c, log)
	if err != nil {
		log.Warn("semantic item search off", "error", err)
		return st
	}
	h, err := semantic.NewItems(st, e, c.Weight, semantic.NewCache(4096), log)
	if err != nil {
		log.Warn("semantic item search off", "error", err)
		return st
	}
	return h
}
