package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
)

//go:embed assets
var assets embed.FS

// Options configure a console. The zero value is a console that may act.
type Options struct {
	// ReadOnly refuses every action (cancel, retry) with 403 and shows no
	// action buttons.
	ReadOnly bool
	// Operator names who acts, in the RETRIED events of retries. Default
	// "console".
	Operator string
	// Logger receives errors the pages could not show. Default
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock pages show ages with. Default time.Now.
	Now func() time.Time
	// Source, when set, says where the store's reads come from (a
	// replica and its lag, or the primary and why): every page shows it.
	// With a pgstore.Replicated store, pass its Source method.
	Source func(context.Context) store.ReadSource
}

// Console is the console's http.Handler.
type Console struct {
	st   store.Store
	opts Options
	mux  *http.ServeMux
	tmpl *template.Template
}

// New returns the console over st.
func New(st store.Store, opts Options) (*Console, error) {
	if opts.Operator == "" {
		opts.Operator = "console"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	tmpl, err := template.New("").Funcs(funcs(opts.Now)).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	c := &Console{st: st, opts: opts, tmpl: tmpl, mux: http.NewServeMux()}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /{$}", c.runsPage)
	c.mux.HandleFunc("GET /runs/{id}", c.runPage)
	c.mux.HandleFunc("GET /workers", c.workersPage)
	c.mux.HandleFunc("POST /runs/{id}/cancel", c.act(c.cancel))
	c.mux.HandleFunc("POST /runs/{id}/retry", c.act(c.retry))
	return c, nil
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	c.mux.ServeHTTP(w, r)
}

// csrfCookie holds the token every form posts back (double submit): a
// page of another origin can make the browser post, but cannot read the
// cookie to put the token in the form.
const csrfCookie = "dagen_csrf"

// token returns the request's CSRF token, setting a new one when it has
// none.
func (c *Console) token(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) == 32 {
		return ck.Value
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return tok
}

// act wraps an action: read-only and CSRF refusals, then the action, then
// a redirect to the run's page with what it did.
func (c *Console) act(fn func(ctx context.Context, r *http.Request) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.opts.ReadOnly {
			c.fail(w, r, http.StatusForbidden, errors.New("this console is read-only: it cannot cancel or retry runs"))
			return
		}
		ck, err := r.Cookie(csrfCookie)
		if err != nil || r.PostFormValue("csrf") == "" ||
			subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostFormValue("csrf"))) != 1 {
			c.fail(w, r, http.StatusForbidden, errors.New("missing or wrong CSRF token: reload the page and try again"))
			return
		}
		msg, err := fn(r.Context(), r)
		if err != nil {
			status := http.StatusInternalServerError
			switch {
			case errors.Is(err, store.ErrRunNotFound):
				status = http.StatusNotFound
			case errors.Is(err, errBadRequest), errors.Is(err, store.ErrNotRetryable), errors.Is(err, store.ErrInvalidRun):
				status = http.StatusConflict
			}
			c.fail(w, r, status, err)
			return
		}
		// A relative Location (http.Redirect would make it absolute, losing
		// the prefix the console is mounted under).
		w.Header().Set("Location", "../"+r.PathValue("id")+"?done="+urlQuery(msg))
		w.WriteHeader(http.StatusSeeOther)
	}
}

var errBadRequest = errors.New("bad request")

// fail answers with an error page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	if status >= 500 {
		c.opts.Logger.Error("dagen console", "path", r.URL.Path, "err", err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = c.tmpl.ExecuteTemplate(w, "error.html", map[string]any{"Status": status, "Text": http.StatusText(status), "Err": err.Error(), "Base": base(r), "Source": c.source(r)})
}

// source says where the page's reads came from; it is asked after them, so
// it tells of a fallback to the primary they made.
func (c *Console) source(r *http.Request) store.ReadSource {
	if c.opts.Source == nil {
		return store.ReadSource{}
	}
	return c.opts.Source(r.Context())
}

// render executes a page template.
func (c *Console) render(w http.ResponseWriter, r *http.Request, name string, data map[string]any) {
	data["Base"] = base(r)
	data["ReadOnly"] = c.opts.ReadOnly
	data["Source"] = c.source(r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := c.tmpl.ExecuteTemplate(w, name, data); err != nil {
		c.opts.Logger.Error("dagen console: render", "page", name, "err", err)
	}
}
