package dockerenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// ContainerSpec says how to run one container on the environment's network.
type ContainerSpec struct {
	// Name is the container's name suffix and its host name on the network.
	Name  string
	Image string
	Env   []string
	// Entrypoint and Cmd override the image's when set.
	Entrypoint []string
	Cmd        []string
	User       string
	// Port is the container's TCP port to publish on 127.0.0.1 (0 = none).
	// It keeps the same host port across restarts.
	Port int
	// Tmpfs mounts an in-memory /tmp (Postgres data dirs).
	Tmpfs bool
	// Ready is polled (after every start) until it returns nil.
	Ready func(ctx context.Context, c *Container) error
	// ReadyTimeout bounds Ready (default 30s).
	ReadyTimeout time.Duration
	// Pod runs the container in the network namespace of a pause
	// container (see [Config.Pause]) that owns its address and ports: when
	// the container is killed its port refuses connections at once, and a
	// restart comes back at the same address.
	Pod bool
	// extraPorts are more container ports published on 127.0.0.1.
	extraPorts []int
	_          struct{}
}

// Container is one container of an environment. Kill and Restart make it
// a [faults.Process]: a crash is a real SIGKILL of the container.
type Container struct {
	env      *Env
	spec     ContainerSpec
	res      *dockertest.Resource
	hostAddr string // 127.0.0.1:port, or ""
	// extraHost maps each of spec.extraPorts to its 127.0.0.1:port.
	extraHost map[int]string

	// pause holds the network namespace of a [ContainerSpec.Pod].
	pause *Container

	mu     sync.Mutex
	exited chan struct{}
}

// ID is the container's ID.
func (c *Container) ID() string { return c.res.Container.ID }

// Name is the container's name, which is also its host name on the
// environment's network.
func (c *Container) Name() string {
	if c.pause != nil {
		return c.pause.Name()
	}
	return strings.TrimPrefix(c.res.Container.Name, "/")
}

// NetAddr is host:port on the environment's network.
func (c *Container) NetAddr(port int) string { return net.JoinHostPort(c.Name(), strconv.Itoa(port)) }

// HostAddr is the published 127.0.0.1:port of [ContainerSpec.Port].
func (c *Container) HostAddr() string { return c.hostAddr }

// Exited is closed when the current run of the container has ended.
func (c *Container) Exited() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exited
}

// watch closes a fresh exited channel when the container stops.
func (c *Container) watch() {
	ch := make(chan struct{})
	c.mu.Lock()
	c.exited = ch
	c.mu.Unlock()
	id := c.ID()
	go func() {
		defer close(ch)
		for {
			_, err := c.env.c.pool.Client.WaitContainer(id)
			var missing *dc.NoSuchContainer
			if err == nil || errors.As(err, &missing) {
				return
			}
			// The wait call itself failed (a daemon hiccup): ask again,
			// unless the container is gone for good.
			if ct, ierr := c.env.c.pool.Client.InspectContainer(id); ierr != nil || !ct.State.Running {
				return
			}
		}
	}()
}

// Kill sends SIGKILL to the container and waits for it to stop.
func (c *Container) Kill(ctx context.Context) error {
	exited := c.Exited()
	select {
	case <-exited:
		return fmt.Errorf("kill %s: not running", c.Name())
	default:
	}
	err := c.env.c.pool.Client.KillContainer(dc.KillContainerOptions{ID: c.ID(), Signal: dc.SIGKILL, Context: ctx})
	if err != nil {
		var notRunning *dc.ContainerNotRunning
		if !errors.As(err, &notRunning) {
			return fmt.Errorf("kill %s: %w", c.Name(), err)
		}
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Restart stops the container if it still runs (SIGTERM, then SIGKILL
// after 2s), starts it again and waits until it is ready.
func (c *Container) Restart(ctx context.Context) error {
	select {
	case <-c.Exited():
	default:
		if err := c.env.c.pool.Client.StopContainerWithContext(c.ID(), 2, ctx); err != nil {
			var notRunning *dc.ContainerNotRunning
			if !errors.As(err, &notRunning) {
				return fmt.Errorf("restart %s: stop: %w", c.Name(), err)
			}
		}
		<-c.Exited()
	}
	if err := c.env.c.pool.Client.StartContainerWithContext(c.ID(), nil, ctx); err != nil {
		return fmt.Errorf("restart %s: %w", c.Name(), err)
	}
	c.watch()
	return c.waitReady(ctx)
}

// Stop removes the container (and its anonymous volumes, and its pause
// container).
func (c *Container) Stop(ctx context.Context) error {
	defer Trace(c.Name()+" remove", time.Now())
	if err := c.removeSelf(ctx); err != nil {
		return err
	}
	if c.pause != nil {
		return c.pause.Stop(ctx)
	}
	return nil
}

// removeSelf removes this container only (not a pod's pause container).
func (c *Container) removeSelf(ctx context.Context) error {
	err := c.env.c.pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: c.ID(), Force: true, RemoveVolumes: true, Context: ctx})
	var missing *dc.NoSuchContainer
	if err != nil && !errors.As(err, &missing) {
		return fmt.Errorf("remove %s: %w", c.Name(), err)
	}
	c.env.forget(c)
	return nil
}

// Discard removes the container in the background: a finished run does
// not wait for the daemon. [Env.Close] waits for the removal and returns
// its error. A pod's pause container, once nothing is left in its network
// namespace, is kept for a later pod (it holds only the address and the
// published port; every pod's own container is new). The channel is
// closed when the removal is over.
func (c *Container) Discard() <-chan struct{} {
	done := make(chan struct{})
	ok := c.env.Go(func() error {
		defer close(done)
		ctx := context.Background()
		if c.pause == nil {
			return c.Stop(ctx)
		}
		if err := c.removeSelf(ctx); err != nil {
			return errors.Join(err, c.pause.Stop(ctx))
		}
		select {
		case <-c.pause.Exited():
		default:
			if c.env.putIdle(c.pause) {
				return nil
			}
		}
		return c.pause.Stop(ctx)
	})
	if !ok {
		// Closed: Close removes it, or has.
		close(done)
	}
	return done
}

// Logs is the tail of the container's output, for error messages.
func (c *Container) Logs() string {
	var b strings.Builder
	_ = c.env.c.pool.Client.Logs(dc.LogsOptions{Container: c.ID(), OutputStream: &b, ErrorStream: &b,
		Stdout: true, Stderr: true, Tail: "30"})
	return strings.TrimSpace(b.String())
}

func (c *Container) waitReady(ctx context.Context) error {
	if c.spec.Ready == nil {
		return nil
	}
	timeout := c.spec.ReadyTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.spec.Ready(ctx, c)
		if err == nil {
			return nil
		}
		select {
		case <-c.Exited():
			return fmt.Errorf("%s exited before it was ready: %v\n%s", c.Name(), err, c.Logs())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v: %v\n%s", c.Name(), timeout, err, c.Logs())
		case <-tick.C:
		}
	}
}
