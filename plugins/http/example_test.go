package httpstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/memex-dev/memex/core"
	httpstore "github.com/memex-dev/memex/plugins/http"
)

func ExampleStore_Search() {
	// A stand-in for memex serve.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Memex-Receipt", "rc-42")
		fmt.Fprint(w, `[{"qa_id":"qa-1","question":"why does go test -race fail?","trust":0.83,"validation_level":2,"status":"active"}]`)
	}))
	defer srv.Close()

	store, err := httpstore.New(httpstore.Config{BaseURL: srv.URL})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	matches, err := store.Search(context.Background(), core.SearchRequest{ProjectID: "acme", Query: "race"})
	if err != nil {
		panic(err)
	}
	for _, m := range matches {
		fmt.Println(m.QAID, m.Level, m.Trust, m.ReceiptID)
	}
	// Output: qa-1 L2 0.83 rc-42
}

func ExampleStore_Get_errors() {
	// Statuses come back as core's sentinel errors.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"not_found","message":"qa qa-9 not found in project acme"}}`)
	}))
	defer srv.Close()

	store, _ := httpstore.New(httpstore.Config{BaseURL: srv.URL})
	_, err := store.Get(context.Background(), "acme", "qa-9")
	fmt.Println(errors.Is(err, core.ErrNotFound))
	fmt.Println(err)
	// Output:
	// true
	// http: get: status 404 (not_found): qa qa-9 not found in project acme
}
