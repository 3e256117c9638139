// Package semantic owns memex's optional semantic search (SPEC §4, §11): the
// Embedder interface, an OpenAI-compatible embeddings client that works with
// any server speaking that API (OpenAI, llama.cpp's server, Ollama's /v1,
// vLLM, ...), vector helpers (Normalize, Cosine, Encode, Decode) and hybrid
// fusion of the lexical relevance with the embedding similarity (Rerank).
//
// Semantic search is off by default and never required: memex works without
// a model or a network. When it is on, the store's lexical search still picks
// the top N candidates (no corpus scan here); this package only reorders those
// N. Every failure of the embedder is reported as an error wrapping
// core.ErrUnavailable or core.ErrInvalid so a caller can fail open and keep
// the lexical order.
//
// The package imports only the standard library and core. It never logs
// unless given a *slog.Logger, and no error or log line carries request text
// (queries, questions, answers) or the API key.
package semantic
