package main

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// proxy serves S3 on a port of 127.0.0.1 of its own, holding each request
// a fixed time before passing it on, and counts the requests by method and
// answer. The Host header goes on as the client sent it, so the request's
// signature still holds.
type proxy struct {
	endpoint string

	mu     sync.Mutex
	counts map[reqKind]int
}

// reqKind is a request's method and the status of its answer.
type reqKind struct {
	method string
	status int
}

func startProxy(endpoint string, delay time.Duration) (*proxy, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{endpoint: "http://" + ln.Addr().String(), counts: map[reqKind]int{}}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if delay > 0 {
			time.Sleep(delay)
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		rp.ServeHTTP(sw, r)
		p.mu.Lock()
		p.counts[reqKind{r.Method, sw.status}]++
		p.mu.Unlock()
	}))
	return p, nil
}

// take returns the counts since the last take and starts new ones.
func (p *proxy) take() map[reqKind]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	p.counts = map[reqKind]int{}
	return c
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
