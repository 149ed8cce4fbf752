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

// A service that authenticates its users itself gives the console each
// request's user: here a viewer, who sees the pages and cannot act.
func ExampleOptions_user() {
	st := memstore.New(nil)
	h, err := console.New(st, console.Options{User: func(r *http.Request) console.User {
		// In a service: the user its own authentication put in r.Context().
		return console.User{Name: "ann@example.com", Role: console.Viewer}
	}})
	if err != nil {
		panic(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/runs/01964f6c-0000-7000-8000-000000000000/retry", nil))
	fmt.Println(rec.Code)
	// Output: 403
}

// Served on its own, the console asks who you are: pages go to its
// login page until you sign in.
func ExampleAuth() {
	st := memstore.New(nil)
	h, err := console.New(st, console.Options{Auth: &console.Auth{Accounts: []console.Account{
		{Name: "ann", Role: console.Operator, Password: "a long random password"},
		{Name: "bob", Role: console.Viewer, Password: "sha256:bef4261f394bf71fd2b565cd76396ac9ed7953f9110c69ee49d7a82871238fbf"},
	}}})
	if err != nil {
		panic(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Header().Get("Location"))
	// Output: 303 ./login
}
