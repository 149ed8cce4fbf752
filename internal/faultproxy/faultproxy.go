// Package faultproxy is a TCP proxy for tests that puts faults between a
// client and a server it cannot touch: it forwards connections from a local
// address to a target (a real Postgres), and can cut them (the server is
// down: every connection is closed, new ones are closed at once) or freeze
// them (the server or the network stalls: connections stay open and no byte
// moves either way, new ones too) until it is restored. It counts the
// connections clients attempt, so tests can bound how hard a client hammers
// a server that is away.
package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
)

// State is what the proxy does with connections.
type State int

// States.
const (
	Up     State = iota // forward bytes
	Down                // close every connection, and each new one at once
	Frozen              // keep connections open, move no bytes
)

// Proxy forwards connections to a target, subject to its State.
type Proxy struct {
	network, target string
	ln              net.Listener

	mu    sync.Mutex
	cond  *sync.Cond // signalled when the state changes
	state State
	conns map[net.Conn]struct{}

	attempts atomic.Int64
	wg       sync.WaitGroup
	closed   atomic.Bool
}

// Start listens on 127.0.0.1 and forwards each connection to target on
// network ("tcp" and host:port, or "unix" and a socket path). Close it
// when done.
func Start(network, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{network: network, target: target, ln: ln, conns: make(map[net.Conn]struct{})}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Attempts returns how many connections clients have attempted so far.
func (p *Proxy) Attempts() int64 { return p.attempts.Load() }

// Set puts the proxy in state s. Down closes every open connection.
func (p *Proxy) Set(s State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = s
	if s == Down {
		for c := range p.conns {
			_ = c.Close()
		}
	}
	p.cond.Broadcast()
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.closed.Store(true)
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.attempts.Add(1)
		p.wg.Add(1)
		go p.serve(c)
	}
}

// track registers c unless the proxy is down or closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == Down || p.closed.Load() {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		_ = client.Close()
		return
	}
	server, err := net.Dial(p.network, p.target)
	if err != nil {
		p.untrack(client)
		return
	}
	if !p.track(server) {
		p.untrack(client, server)
		return
	}
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); p.pump(server, client) }()
	go func() { defer pumps.Done(); p.pump(client, server) }()
	pumps.Wait()
	p.untrack(client, server)
}

// pump copies from src to dst, holding every chunk while the proxy is
// frozen, until either side fails or the proxy cuts them.
func (p *Proxy) pump(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitThaw() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: done either way
		}
	}
}

// waitThaw blocks while the proxy is frozen and reports whether bytes may
// move on (false once it is down or closed).
func (p *Proxy) waitThaw() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.state == Frozen && !p.closed.Load() {
		p.cond.Wait()
	}
	return p.state == Up && !p.closed.Load()
}
