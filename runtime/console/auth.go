package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Role is what a user of the console may do.
type Role int

const (
	// NoRole is a request from nobody the console knows: it is refused.
	NoRole Role = iota
	// Viewer sees every page but may not act: no action buttons are
	// shown, and every action is refused with 403.
	Viewer
	// Operator sees every page and may act: cancel and retry runs.
	Operator
)

// String returns "viewer", "operator" or "none".
func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Operator:
		return "operator"
	}
	return "none"
}

// ParseRole parses "viewer" or "operator", as String prints them.
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "viewer":
		return Viewer, nil
	case "operator":
		return Operator, nil
	}
	return NoRole, fmt.Errorf("unknown role %q: want viewer or operator", s)
}

// User is who a request comes from: the name the console shows and
// writes in the RETRIED events of retries, and the role that says what
// they may do.
type User struct {
	Name string
	Role Role
}

// Auth makes the console ask who you are, for serving it on its own (as
// dagen ui does) rather than behind a service's authentication: users
// sign in with a password, or a reverse proxy that authenticated them
// says who they are in a header.
//
// A sign-in is a session cookie (HttpOnly, SameSite=Strict, Secure over
// TLS) holding the user, role and expiry, signed with HMAC-SHA256; the
// console keeps no session store, only the sessions signed out before
// they expire.
type Auth struct {
	// Accounts may sign in on the console's login page.
	Accounts []Account
	// ProxyUserHeader, when set, names a header (X-Forwarded-User, say)
	// that a reverse proxy in front of the console sets to the name of
	// the user it authenticated; a request that carries it is that user,
	// without signing in. Only set it when the proxy is the only way to
	// the console, and strips the header from what clients send: anyone
	// who reaches the console directly can write it. Empty (the default):
	// the header is ignored.
	ProxyUserHeader string
	// ProxyRoleHeader names the header that says the proxied user's role,
	// "viewer" or "operator" (any other value is refused). Empty: proxied
	// users are viewers.
	ProxyRoleHeader string
	// TrustForwardedProto marks the cookies Secure when the request's
	// X-Forwarded-Proto is https, as a TLS-terminating proxy in front of
	// the console says. Requests over TLS to the console itself always
	// get Secure cookies.
	TrustForwardedProto bool
	// SessionTTL is how long a sign-in lasts. Default 12 hours.
	SessionTTL time.Duration
	// Key signs the session cookies. Default: 32 random bytes per
	// console, so a restart signs everyone out.
	Key []byte
}

// Account is a user who signs in with a password.
type Account struct {
	Name string
	Role Role
	// Password is the password itself, or "sha256:" followed by the hex
	// SHA-256 of it (so that a file of accounts need not hold it). Use a
	// long random one: SHA-256 is no password hash, and the console does
	// not slow down guessing.
	Password string
}

// digest returns the SHA-256 that the account's password must hash to.
func (a Account) digest() ([]byte, error) {
	if h, ok := strings.CutPrefix(a.Password, "sha256:"); ok {
		d, err := hex.DecodeString(h)
		if err != nil || len(d) != sha256.Size {
			return nil, fmt.Errorf("account %q: the password's sha256 is not 64 hex digits", a.Name)
		}
		return d, nil
	}
	if a.Password == "" {
		return nil, fmt.Errorf("account %q: empty password", a.Name)
	}
	d := sha256.Sum256([]byte(a.Password))
	return d[:], nil
}

const sessionCookie = "dagen_session"

// authn is an Auth ready to serve: digests of the passwords and the key.
type authn struct {
	cfg      Auth
	accounts map[string]account
	key      []byte

	mu      sync.Mutex
	revoked map[string]time.Time // sessions signed out: nonce → expiry
}

type account struct {
	role   Role
	digest []byte
}

func newAuthn(cfg Auth) (*authn, error) {
	a := &authn{cfg: cfg, accounts: map[string]account{}, key: cfg.Key, revoked: map[string]time.Time{}}
	if a.cfg.SessionTTL <= 0 {
		a.cfg.SessionTTL = 12 * time.Hour
	}
	if len(a.key) == 0 {
		a.key = make([]byte, 32)
		if _, err := rand.Read(a.key); err != nil {
			return nil, fmt.Errorf("session key: %w", err)
		}
	}
	for _, acc := range cfg.Accounts {
		if acc.Name == "" {
			return nil, errors.New("an account without a name")
		}
		if acc.Role != Viewer && acc.Role != Operator {
			return nil, fmt.Errorf("account %q: role %v: want Viewer or Operator", acc.Name, acc.Role)
		}
		if _, dup := a.accounts[acc.Name]; dup {
			return nil, fmt.Errorf("account %q twice", acc.Name)
		}
		d, err := acc.digest()
		if err != nil {
			return nil, err
		}
		a.accounts[acc.Name] = account{role: acc.Role, digest: d}
	}
	if len(a.accounts) == 0 && cfg.ProxyUserHeader == "" {
		return nil, errors.New("no accounts and no proxy header: nobody could use the console")
	}
	return a, nil
}

// check returns the role of the account name with password, or NoRole.
// It takes as long whether the name or the password is wrong.
func (a *authn) check(name, password string) Role {
	got := sha256.Sum256([]byte(password))
	acc, ok := a.accounts[name]
	want := acc.digest
	if !ok {
		want = make([]byte, sha256.Size) // compared all the same
	}
	if subtle.ConstantTimeCompare(got[:], want) == 1 && ok {
		return acc.role
	}
	return NoRole
}

// secure reports whether r came over TLS, to the console or to a
// trusted proxy in front of it.
func (a *authn) secure(r *http.Request) bool {
	return r.TLS != nil || a != nil && a.cfg.TrustForwardedProto && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// user returns who r comes from: the proxy's header when it is trusted
// and present, else the session cookie; and whether it was the session.
func (a *authn) user(r *http.Request, now time.Time) (User, bool) {
	if h := a.cfg.ProxyUserHeader; h != "" {
		if name := strings.TrimSpace(r.Header.Get(h)); name != "" {
			role := Viewer
			if rh := a.cfg.ProxyRoleHeader; rh != "" {
				var err error
				if role, err = ParseRole(r.Header.Get(rh)); err != nil {
					return User{Name: name}, false
				}
			}
			return User{Name: name, Role: role}, false
		}
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return User{}, false
	}
	s, ok := a.verify(ck.Value, now)
	if !ok {
		return User{}, false
	}
	return s.User, true
}

// session is what the cookie holds.
type session struct {
	User
	expires time.Time
	nonce   string
}

// sign returns the cookie value of s: the payload and its HMAC, each
// base64url.
func (a *authn) sign(s session) string {
	payload := strings.Join([]string{strconv.Itoa(int(s.Role)), strconv.FormatInt(s.expires.Unix(), 10), s.nonce, s.Name}, "|")
	p := base64.RawURLEncoding.EncodeToString([]byte(payload))
	return p + "." + base64.RawURLEncoding.EncodeToString(a.mac(p))
}

func (a *authn) mac(p string) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(p))
	return m.Sum(nil)
}

// verify returns the session of a cookie value whose signature holds,
// which has not expired and was not signed out.
func (a *authn) verify(v string, now time.Time) (session, bool) {
	p, sig, ok := strings.Cut(v, ".")
	if !ok {
		return session{}, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, a.mac(p)) {
		return session{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return session{}, false
	}
	f := strings.SplitN(string(raw), "|", 4)
	if len(f) != 4 {
		return session{}, false
	}
	role, err1 := strconv.Atoi(f[0])
	exp, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || (Role(role) != Viewer && Role(role) != Operator) {
		return session{}, false
	}
	s := session{User: User{Name: f[3], Role: Role(role)}, expires: time.Unix(exp, 0), nonce: f[2]}
	if !now.Before(s.expires) {
		return session{}, false
	}
	a.mu.Lock()
	_, out := a.revoked[s.nonce]
	a.mu.Unlock()
	return s, !out
}

// revoke remembers that the session signed out, until it would have
// expired anyway.
func (a *authn) revoke(s session, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for n, exp := range a.revoked {
		if !now.Before(exp) {
			delete(a.revoked, n)
		}
	}
	a.revoked[s.nonce] = s.expires
}

// userKey is the context key of the request's User.
type userKey struct{}

// userOf returns the User that ServeHTTP found for r.
func userOf(r *http.Request) User {
	u, _ := r.Context().Value(userKey{}).(User)
	return u
}

// who returns who r comes from, and whether by a session of the
// console's own (which can sign out).
func (c *Console) who(r *http.Request) (User, bool) {
	var u User
	var session bool
	switch {
	case c.auth != nil:
		u, session = c.auth.user(r, c.opts.Now())
	case c.opts.User != nil:
		u = c.opts.User(r)
		if u.Name == "" {
			u.Name = c.opts.Operator
		}
	default:
		u = User{Name: c.opts.Operator, Role: Operator}
	}
	if c.opts.ReadOnly && u.Role > Viewer {
		u.Role = Viewer
	}
	return u, session
}

// open reports whether r may be served to nobody: the login page and the
// static assets.
func (c *Console) open(r *http.Request) bool {
	return c.auth != nil && (r.URL.Path == "/login" || strings.HasPrefix(r.URL.Path, "/static/"))
}

// refuse answers a request from nobody the console knows: a page asked
// for goes to the login page when there is one; anything else is 401
// (not signed in) or 403 (a user without a role).
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, u User) {
	if u.Name == "" && c.auth != nil && len(c.auth.accounts) > 0 && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.Header().Set("Location", base(r)+"login")
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	if u.Name == "" {
		c.fail(w, r, http.StatusUnauthorized, errors.New("sign in to use the console"))
		return
	}
	c.fail(w, r, http.StatusForbidden, fmt.Errorf("%s has no role in the console", u.Name))
}

// loginPage shows the login form.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.renderStatus(w, r, http.StatusOK, "login.html", map[string]any{"CSRF": c.token(w, r)})
}

// login signs in: a session cookie for the account whose password the
// form gives, or the form again with an error that does not say whether
// the name or the password was wrong.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !c.csrfOK(r) {
		c.fail(w, r, http.StatusForbidden, errors.New("missing or wrong CSRF token: reload the page and try again"))
		return
	}
	name := r.PostFormValue("name")
	role := c.auth.check(name, r.PostFormValue("password"))
	if role == NoRole {
		c.opts.Logger.Warn("dagen console: failed sign-in", "name", name, "remote", r.RemoteAddr)
		c.renderStatus(w, r, http.StatusUnauthorized, "login.html", map[string]any{
			"CSRF": c.token(w, r), "Name": name, "Wrong": true,
		})
		return
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	s := session{User: User{Name: name, Role: role}, expires: c.opts.Now().Add(c.auth.cfg.SessionTTL), nonce: hex.EncodeToString(nonce[:])}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: c.auth.sign(s), Path: "/", Expires: s.expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.auth.secure(r),
	})
	w.Header().Set("Location", "./")
	w.WriteHeader(http.StatusSeeOther)
}

// logout signs out: the session is revoked and its cookie cleared.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if !c.csrfOK(r) {
		c.fail(w, r, http.StatusForbidden, errors.New("missing or wrong CSRF token: reload the page and try again"))
		return
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if s, ok := c.auth.verify(ck.Value, c.opts.Now()); ok {
			c.auth.revoke(s, c.opts.Now())
		}
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.auth.secure(r),
	})
	w.Header().Set("Location", "login")
	w.WriteHeader(http.StatusSeeOther)
}

// withUser returns r carrying u, for the pages and actions.
func withUser(r *http.Request, u User) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), userKey{}, u))
}
