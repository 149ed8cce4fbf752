package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/console"
)

// accounts are the test's: a viewer and an operator.
var accounts = []console.Account{
	{Name: "vera", Role: console.Viewer, Password: "look but do not touch"},
	{Name: "otto", Role: console.Operator, Password: "sha256:bef4261f394bf71fd2b565cd76396ac9ed7953f9110c69ee49d7a82871238fbf"}, // "ship it",
}

// signIn posts the login form as name with password and returns the
// response.
func signIn(t *testing.T, c *http.Client, base, name, password string) *http.Response {
	t.Helper()
	_, body := get(t, c, base+"/dagen/login")
	m := csrfRE.FindStringSubmatch(body)
	require.NotNil(t, m, "the login form carries a CSRF token")
	resp, err := c.PostForm(base+"/dagen/login", url.Values{"csrf": {m[1]}, "name": {name}, "password": {password}})
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

func cookieOf(resp *http.Response, name string) *http.Cookie {
	for _, ck := range resp.Cookies() {
		if ck.Name == name {
			return ck
		}
	}
	return nil
}

func TestAuthSignIn(t *testing.T) {
	var now atomic.Pointer[time.Time]
	start := time.Now()
	now.Store(&start)
	s := seed(t, console.Options{
		Auth: &console.Auth{Accounts: accounts, SessionTTL: time.Hour},
		Now:  func() time.Time { return *now.Load() },
	})
	c := client(t)

	// Nobody: pages go to the login page, actions are refused.
	code, _ := get(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String())
	require.Equal(t, http.StatusSeeOther, code)
	resp, err := c.Get(s.srv.URL + "/dagen/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "./login", resp.Header.Get("Location"), "relative to the mount point")
	code, _, _ = post(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String()+"/retry", url.Values{})
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = get(t, c, s.srv.URL+"/dagen/static/console.css")
	require.Equal(t, http.StatusOK, code, "the login page's style")
	_, body := get(t, c, s.srv.URL+"/dagen/login")
	require.NotContains(t, body, `href="./workers"`, "no links to pages nobody may see")

	// Wrong name or wrong password: the same answer.
	var wrong []string
	for _, np := range [][2]string{{"otto", "ship it!"}, {"nobody", "ship it"}, {"vera", ""}} {
		_, body := get(t, c, s.srv.URL+"/dagen/login")
		m := csrfRE.FindStringSubmatch(body)
		code, body, _ := post(t, c, s.srv.URL+"/dagen/login", url.Values{"csrf": {m[1]}, "name": {np[0]}, "password": {np[1]}})
		require.Equal(t, http.StatusUnauthorized, code, np[0])
		i := strings.Index(body, `id="wrong"`)
		require.Positive(t, i, "says it was wrong")
		wrong = append(wrong, body[i:i+60])
	}
	require.Equal(t, wrong[0], wrong[1], "does not say whether the name or the password was wrong")
	code, _, _ = post(t, c, s.srv.URL+"/dagen/login", url.Values{"name": {"otto"}, "password": {"ship it"}})
	require.Equal(t, http.StatusForbidden, code, "a login without the CSRF token")

	// The session cookie.
	resp = signIn(t, c, s.srv.URL, "vera", "look but do not touch")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	ck := cookieOf(resp, "dagen_session")
	require.NotNil(t, ck)
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	require.False(t, ck.Secure, "plain HTTP, no trusted proxy")
	require.WithinDuration(t, start.Add(time.Hour), ck.Expires, 2*time.Second)

	// A viewer: no action buttons, actions refused.
	code, body = get(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String())
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "vera (viewer)")
	require.NotContains(t, body, `id="retry"`)
	m := csrfRE.FindStringSubmatch(body)
	require.NotNil(t, m, "the sign-out form")
	code, body, _ = post(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String()+"/retry", url.Values{"csrf": {m[1]}})
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, "only operators")

	// A forged or tampered cookie is nobody.
	forged := &http.Cookie{Name: "dagen_session", Value: strings.Replace(ck.Value, ck.Value[:4], "AAAA", 1)}
	req, _ := http.NewRequest("GET", s.srv.URL+"/dagen/", nil)
	req.AddCookie(forged)
	resp, err = http.DefaultTransport.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	// An operator acts, and the RETRIED events name them.
	co := client(t)
	require.Equal(t, http.StatusSeeOther, signIn(t, co, s.srv.URL, "otto", "ship it").StatusCode)
	_, body = get(t, co, s.srv.URL+"/dagen/runs/"+s.failed.String())
	require.Contains(t, body, `id="retry"`)
	m = csrfRE.FindStringSubmatch(body)
	code, body, loc := post(t, co, s.srv.URL+"/dagen/runs/"+s.failed.String()+"/retry", url.Values{"csrf": {m[1]}})
	require.Equal(t, http.StatusSeeOther, code, body)
	require.Contains(t, loc, "retried")
	evs, err := s.e.Events(context.Background(), s.failed)
	require.NoError(t, err)
	var by string
	for _, ev := range evs {
		if ev.Type == "RETRIED" {
			by = ev.Detail
		}
	}
	require.Contains(t, by, "otto")

	// Signing out ends the session, even for a copy of its cookie.
	_, body = get(t, co, s.srv.URL+"/dagen/")
	m = csrfRE.FindStringSubmatch(body)
	u, _ := url.Parse(s.srv.URL + "/dagen/")
	old := co.Jar.Cookies(u)
	code, _, loc = post(t, co, s.srv.URL+"/dagen/logout", url.Values{"csrf": {m[1]}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "login", loc)
	code, _ = get(t, co, s.srv.URL+"/dagen/")
	require.Equal(t, http.StatusSeeOther, code, "signed out")
	co.Jar.SetCookies(u, old)
	code, _ = get(t, co, s.srv.URL+"/dagen/")
	require.Equal(t, http.StatusSeeOther, code, "the old cookie is signed out too")

	// Sessions expire.
	code, _ = get(t, c, s.srv.URL+"/dagen/")
	require.Equal(t, http.StatusOK, code, "vera is still signed in")
	later := start.Add(time.Hour + time.Second)
	now.Store(&later)
	code, _ = get(t, c, s.srv.URL+"/dagen/")
	require.Equal(t, http.StatusSeeOther, code, "vera's session expired")
}

func TestAuthSecureCookie(t *testing.T) {
	for _, tc := range []struct {
		name   string
		trust  bool
		secure bool
	}{{"untrusted proxy", false, false}, {"trusted proxy", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := seed(t, console.Options{Auth: &console.Auth{Accounts: accounts, TrustForwardedProto: tc.trust}})
			c := client(t)
			_, body := get(t, c, s.srv.URL+"/dagen/login")
			m := csrfRE.FindStringSubmatch(body)
			req, _ := http.NewRequest("POST", s.srv.URL+"/dagen/login", strings.NewReader(url.Values{"csrf": {m[1]}, "name": {"vera"}, "password": {"look but do not touch"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Forwarded-Proto", "https")
			resp, err := c.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
			require.Equal(t, tc.secure, cookieOf(resp, "dagen_session").Secure)
		})
	}
}

func TestAuthProxyHeader(t *testing.T) {
	fetch := func(t *testing.T, srv string, method, path string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	t.Run("off by default", func(t *testing.T) {
		s := seed(t, console.Options{Auth: &console.Auth{Accounts: accounts}})
		code, _ := fetch(t, s.srv.URL, "GET", "/dagen/", map[string]string{"X-Forwarded-User": "mallory", "X-Forwarded-Role": "operator"})
		require.Equal(t, http.StatusSeeOther, code, "the header is ignored: sign in")
	})
	t.Run("on", func(t *testing.T) {
		s := seed(t, console.Options{Auth: &console.Auth{ProxyUserHeader: "X-Forwarded-User", ProxyRoleHeader: "X-Forwarded-Role"}})
		code, _ := fetch(t, s.srv.URL, "GET", "/dagen/", nil)
		require.Equal(t, http.StatusUnauthorized, code, "no header, no login page: nobody")
		code, body := fetch(t, s.srv.URL, "GET", "/dagen/runs/"+s.failed.String(), map[string]string{"X-Forwarded-User": "ann", "X-Forwarded-Role": "viewer"})
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "ann (viewer)")
		require.NotContains(t, body, `id="retry"`)
		require.NotContains(t, body, `id="logout"`, "the proxy signs out, not the console")
		code, body = fetch(t, s.srv.URL, "GET", "/dagen/runs/"+s.failed.String(), map[string]string{"X-Forwarded-User": "bob", "X-Forwarded-Role": "operator"})
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `id="retry"`)
		code, _ = fetch(t, s.srv.URL, "GET", "/dagen/", map[string]string{"X-Forwarded-User": "eve", "X-Forwarded-Role": "admin"})
		require.Equal(t, http.StatusForbidden, code, "a role the console does not know")
		code, _ = fetch(t, s.srv.URL, "POST", "/dagen/runs/"+s.failed.String()+"/retry", map[string]string{"X-Forwarded-User": "ann", "X-Forwarded-Role": "viewer"})
		require.Equal(t, http.StatusForbidden, code)
	})
}

// TestOptionsUser mounts the console behind a service's own
// authentication, which gives each request its role.
func TestOptionsUser(t *testing.T) {
	s := seed(t, console.Options{User: func(r *http.Request) console.User {
		role, _ := console.ParseRole(r.Header.Get("X-Test-Role"))
		return console.User{Name: r.Header.Get("X-Test-User"), Role: role}
	}})
	do := func(method, role string, form url.Values, cookies ...*http.Cookie) (*http.Response, string) {
		req, _ := http.NewRequest(method, s.srv.URL+"/dagen/runs/"+s.failed.String(), nil)
		if method == "POST" {
			req, _ = http.NewRequest(method, s.srv.URL+"/dagen/runs/"+s.failed.String()+"/retry", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set("X-Test-User", "sam")
		req.Header.Set("X-Test-Role", role)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	resp, body := do("GET", "viewer", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, body, `id="retry"`)
	require.NotContains(t, body, "sam (viewer)", "no sign-in header without Auth")
	resp, body = do("GET", "operator", nil)
	require.Contains(t, body, `id="retry"`)
	tok := csrfRE.FindStringSubmatch(body)[1]
	ck := cookieOf(resp, "dagen_csrf")
	resp, _ = do("POST", "viewer", url.Values{"csrf": {tok}}, ck)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = do("POST", "operator", url.Values{"csrf": {tok}}, ck)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = do("GET", "", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no role")
}
