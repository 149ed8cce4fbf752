package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/dagenhq/dagen/runtime/console"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// A service mounts the console under a prefix, behind its own
// authentication.
func Example() {
	st := memstore.New(nil) // pgstore.Store in production
	h, err := console.New(st, console.Options{ReadOnly: true})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/dagen/", http.StripPrefix("/dagen", h)) // wrap h in the service's auth
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/dagen/", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	// Output: 200 text/html; charset=utf-8
}
