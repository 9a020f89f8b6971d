// Package netproxy is a TCP proxy for tests that cut the network between a
// client and a server without either side noticing at once, as a network
// partition, a vanished host or a firewall dropping a flow does: nothing
// arrives, nothing is reset. Hold keeps what either side sends back until
// Restore lets it through (TCP retransmitting it); Drop discards it. Close
// takes the proxy away: connections are dropped and new ones refused.
package netproxy

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a server. Make one with Start.
type Proxy struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex // guards the fields below
	up     chan struct{}
	drop   bool // while cut: discard instead of holding back
	conns  []net.Conn
	closed bool
}

// Start starts a proxy to target on a free loopback port; the test's
// cleanup closes it.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, up: make(chan struct{})}
	close(p.up)
	p.wg.Add(1)
	go p.accept(target)
	t.Cleanup(p.Close)
	return p
}

func (p *Proxy) accept(target string) {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			u.Close()
			return
		}
		p.conns = append(p.conns, c, u)
		p.wg.Add(2)
		p.mu.Unlock()
		go func() { defer p.wg.Done(); p.forward(u, c) }()
		go func() { defer p.wg.Done(); p.forward(c, u) }()
	}
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Hold cuts the network: what either side sends (and its closing) waits
// until Restore.
func (p *Proxy) Hold() { p.cut(false) }

// Drop cuts the network: what either side sends meanwhile is lost.
func (p *Proxy) Drop() { p.cut(true) }

func (p *Proxy) cut(drop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop = drop
	select {
	case <-p.up:
		p.up = make(chan struct{})
	default:
	}
}

// Restore lets traffic through again, what Hold kept back first.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.up:
	default:
		close(p.up)
	}
}

// state returns a channel closed while the network is up, and whether a
// cut discards.
func (p *Proxy) state() (<-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up, p.drop
}

// forward copies src to dst as the network lets it.
func (p *Proxy) forward(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		up, drop := p.state()
		select {
		case <-up:
		default:
			if drop {
				n = 0
				break
			}
			<-up // hold until Restore (or Close, which restores)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// Close restores the network, stops accepting, drops every connection and
// waits for the forwarding goroutines.
func (p *Proxy) Close() {
	p.Restore()
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
