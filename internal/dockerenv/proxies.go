package dockerenv

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/idemchaos/idemchaos/internal/proxy"
)

// Ports inside the Toxiproxy container.
const (
	toxiAPIPort      = 8474
	toxiPublicBase   = 20000 // published proxy ports: 20000, 20001, ...
	toxiInternalBase = 30000 // proxies reached only inside the network
)

// startToxiproxy runs the toxiproxy-server container with its API and
// ports proxy ports published on 127.0.0.1, and connects to its API.
func (e *Env) startToxiproxy(ctx context.Context, image string, ports int) (*Container, *pooled, error) {
	extra := make([]int, ports)
	for i := range extra {
		extra[i] = toxiPublicBase + i
	}
	c, err := e.RunContainer(ctx, ContainerSpec{Name: "toxiproxy", Image: image, Port: toxiAPIPort,
		Cmd: []string{"-host=0.0.0.0", "-port=" + strconv.Itoa(toxiAPIPort)}, extraPorts: extra, Ready: HTTPReady("/version")})
	if err != nil {
		return nil, nil, err
	}
	srv, err := proxy.Connect(ctx, "http://"+c.HostAddr())
	if err != nil {
		return nil, nil, err
	}
	p := &pooled{Server: srv, c: c, names: map[string]int{}, free: make(chan int, len(extra))}
	for _, port := range extra {
		p.free <- port
	}
	return c, p, nil
}

// pooled is the toxiproxy-server as the harness sees it: a proxy created
// without a listen address takes one of the published ports, and the
// address returned is its 127.0.0.1 side.
type pooled struct {
	proxy.Server
	c *Container

	free     chan int // published ports not in use
	mu       sync.Mutex
	names    map[string]int // proxy → public port it holds
	internal int
}

var _ proxy.Server = (*pooled)(nil)

// CreateProxy implements [proxy.Server]. A given listen address is passed
// through unchanged (it is inside the container). When every published
// port is taken (many private paths at once), it waits for one to be
// freed, bounded by ctx.
func (p *pooled) CreateProxy(ctx context.Context, name, listen, upstream string) (string, error) {
	if listen != "" {
		return p.Server.CreateProxy(ctx, name, listen, upstream)
	}
	var port int
	select {
	case port = <-p.free:
	case <-ctx.Done():
		return "", fmt.Errorf("create proxy %s: waiting for a free published port: %w", name, ctx.Err())
	}
	p.mu.Lock()
	p.names[name] = port
	p.mu.Unlock()
	if _, err := p.Server.CreateProxy(ctx, name, "0.0.0.0:"+strconv.Itoa(port), upstream); err != nil {
		p.release(name)
		return "", err
	}
	return p.c.extraHost[port], nil
}

func (p *pooled) createInternal(ctx context.Context, name, upstream string) (string, error) {
	p.mu.Lock()
	port := toxiInternalBase + p.internal
	p.internal++
	p.mu.Unlock()
	if _, err := p.Server.CreateProxy(ctx, name, "0.0.0.0:"+strconv.Itoa(port), upstream); err != nil {
		return "", err
	}
	return p.c.NetAddr(port), nil
}

func (p *pooled) release(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if port, ok := p.names[name]; ok {
		delete(p.names, name)
		p.free <- port // never blocks: the channel holds every port
	}
}

// RemoveProxy implements [proxy.Server] and frees the proxy's port.
func (p *pooled) RemoveProxy(ctx context.Context, name string) error {
	err := p.Server.RemoveProxy(ctx, name)
	if err == nil || errors.Is(err, proxy.ErrProxyNotFound) {
		p.release(name)
	}
	return err
}

// EnsureImage checks that image is present locally, pulling it if not;
// without a registry the error says how to build local images.
func (c *Client) EnsureImage(image string) error {
	if _, err := c.pool.Client.InspectImage(image); err == nil {
		return nil
	}
	repo, tag := splitImage(image)
	if err := c.pool.Client.PullImage(dc.PullImageOptions{Repository: repo, Tag: tag}, dc.AuthConfiguration{}); err != nil {
		return fmt.Errorf("%w: %s is not present locally and could not be pulled (%v); build local images with `idemchaos images build`", ErrImageMissing, image, firstLine(err.Error()))
	}
	return nil
}

// ResolveImages fills the empty fields of want: the official image when
// it is present locally, else the local build when that is present, else
// the official name (which is then pulled, or fails saying how to build;
// [Client.ProvideImages] builds instead).
func (c *Client) ResolveImages(want Images) Images {
	im, _ := c.resolve(want, DefaultCatalog)
	if im.Postgres == "" {
		im.Postgres = DefaultCatalog.Official.Postgres
	}
	if im.Toxiproxy == "" {
		im.Toxiproxy = DefaultCatalog.Official.Toxiproxy
	}
	return im
}

// splitImage splits NAME[:TAG] (a registry host may carry a port).
func splitImage(image string) (repo, tag string) {
	i := strings.LastIndexByte(image, ':')
	if i < 0 || strings.Contains(image[i:], "/") {
		return image, "latest"
	}
	return image[:i], image[i+1:]
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
