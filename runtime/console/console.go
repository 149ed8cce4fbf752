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

// Options configure a console. The zero value is a console that may act:
// every request is an Operator named Operator, for a service that mounts
// it behind its own authentication (User gives each request its role).
type Options struct {
	// ReadOnly refuses every action (cancel, retry) with 403 and shows no
	// action buttons, whatever the user's role.
	ReadOnly bool
	// Operator names who acts, in the RETRIED events of retries, when
	// the request's User has no name. Default "console".
	Operator string
	// User, when set, says who each request comes from: a service that
	// mounts the console behind its own authentication gives each
	// request its user's role (Viewer or Operator) and name. A request
	// with NoRole is refused with 403. Unset, every request is an
	// Operator (a Viewer when ReadOnly). Auth, when set, wins.
	User func(*http.Request) User
	// Auth, when set, makes the console ask who you are: a login page,
	// session cookies, or a trusted proxy's header. For serving the
	// console on its own, as dagen ui does.
	Auth *Auth
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
	auth *authn // nil without Options.Auth
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
	if opts.Auth != nil {
		if c.auth, err = newAuthn(*opts.Auth); err != nil {
			return nil, fmt.Errorf("console: auth: %w", err)
		}
		if len(c.auth.accounts) > 0 {
			c.mux.HandleFunc("GET /login", c.loginPage)
			c.mux.HandleFunc("POST /login", c.login)
		}
		c.mux.HandleFunc("POST /logout", c.logout)
	}
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
	if c.open(r) {
		c.mux.ServeHTTP(w, r)
		return
	}
	u, session := c.who(r)
	if u.Role == NoRole {
		c.refuse(w, withUser(r, u), u)
		return
	}
	r = withUser(r, u)
	if session {
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, true))
	}
	c.mux.ServeHTTP(w, r)
}

// sessionKey marks a request signed in with the console's own session,
// which can sign out.
type sessionKey struct{}

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
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.auth.secure(r)})
	return tok
}

// csrfOK reports whether the form posts back the token of its cookie.
func (c *Console) csrfOK(r *http.Request) bool {
	ck, err := r.Cookie(csrfCookie)
	return err == nil && r.PostFormValue("csrf") != "" &&
		subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostFormValue("csrf"))) == 1
}

// act wraps an action: read-only and CSRF refusals, then the action, then
// a redirect to the run's page with what it did.
func (c *Console) act(fn func(ctx context.Context, r *http.Request) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.opts.ReadOnly {
			c.fail(w, r, http.StatusForbidden, errors.New("this console is read-only: it cannot cancel or retry runs"))
			return
		}
		if u := userOf(r); u.Role < Operator {
			c.fail(w, r, http.StatusForbidden, fmt.Errorf("%s is a %s: only operators can cancel or retry runs", u.Name, u.Role))
			return
		}
		if !c.csrfOK(r) {
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
	data := map[string]any{"Status": status, "Text": http.StatusText(status), "Err": err.Error()}
	c.page(w, r, data)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = c.tmpl.ExecuteTemplate(w, "error.html", data)
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
	c.renderStatus(w, r, http.StatusOK, name, data)
}

// renderStatus executes a page template, answering with status.
func (c *Console) renderStatus(w http.ResponseWriter, r *http.Request, status int, name string, data map[string]any) {
	c.page(w, r, data)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.tmpl.ExecuteTemplate(w, name, data); err != nil {
		c.opts.Logger.Error("dagen console: render", "page", name, "err", err)
	}
}

// page adds what every page's header shows to data: the way back to the
// first page, whether the user may act, who is signed in (with a sign-out
// button for the console's own sessions), and where the reads came from.
func (c *Console) page(w http.ResponseWriter, r *http.Request, data map[string]any) {
	u := userOf(r)
	data["Base"] = base(r)
	data["ReadOnly"] = u.Role == Viewer
	data["Source"] = c.source(r)
	data["Anonymous"] = c.auth != nil && u.Role == NoRole
	if c.auth != nil && u.Role != NoRole {
		data["SignedIn"] = u
		if signed, _ := r.Context().Value(sessionKey{}).(bool); signed {
			data["Logout"] = true
			if _, ok := data["CSRF"]; !ok {
				data["CSRF"] = c.token(w, r)
			}
		}
	}
}
