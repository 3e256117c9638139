package semantic

import "context"

// Embedder turns texts into vectors.
//
// Contract:
//   - Embed returns exactly one vector per input text, in input order, all of
//     the same length (Dimensions once known). A nil or empty texts slice
//     returns an empty result without any I/O. An empty string among the texts
//     is an error wrapping core.ErrInvalid naming its index.
//   - Implementations split large inputs into batches themselves (OpenAI:
//     Config.BatchSize texts per request); callers may pass any number of
//     texts and should pass them in one call to save round trips.
//   - Errors wrap core.ErrUnavailable when the same call may succeed later
//     (network errors, timeouts, cancelled contexts, HTTP 408/429/5xx after
//     retries) and core.ErrInvalid when it will not (HTTP 4xx, a response
//     that breaks this contract, a bad configuration). No error contains
//     request text or credentials.
//   - Embed is safe for concurrent use. Returned vectors are owned by the
//     caller.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimensions is the vector length, or 0 while it is not known yet (an
	// OpenAI client without Config.Dimensions learns it from the first
	// response).
	Dimensions() int
	// Name identifies the model ("openai:text-embedding-3-small"); caches and
	// stored vectors are only valid for the embedder that made them.
	Name() string
}
