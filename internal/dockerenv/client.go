package dockerenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// Labels on everything this package creates.
const (
	// LabelRun names the environment a container or network belongs to.
	LabelRun = "io.idemchaos.run"
	// LabelOwner is the PID of the harness that made it; the reaper removes
	// what belongs to a PID that no longer runs.
	LabelOwner = "io.idemchaos.owner"
	// LabelImage marks an image built by this package: its value is the
	// image's role (postgres, toxiproxy, reference, service).
	LabelImage = "io.idemchaos.image"
	// LabelHash is the content hash an image was built from; an image with
	// the same hash is reused instead of rebuilt.
	LabelHash = "io.idemchaos.hash"
)

// Client is a connection to the Docker Engine.
type Client struct {
	pool *dockertest.Pool
}

// Connect reaches the Docker Engine (DOCKER_HOST or the default socket) and
// reaps environments whose harness died. An unreachable daemon is
// [ErrDaemonUnreachable].
func Connect(ctx context.Context) (*Client, error) {
	if err := addrgate.DockerHost(os.Getenv("DOCKER_HOST")); err != nil {
		return nil, err
	}
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrDaemonUnreachable, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Client.PingWithContext(pctx); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrDaemonUnreachable, err)
	}
	c := &Client{pool: pool}
	if _, err := c.Reap(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// API is the underlying go-dockerclient, for callers that need more.
func (c *Client) API() *dc.Client { return c.pool.Client }

// Reap removes the containers and networks of environments whose owner
// process no longer runs on this machine, and returns how many containers
// it removed.
func (c *Client) Reap(ctx context.Context) (int, error) {
	cs, err := c.pool.Client.ListContainers(dc.ListContainersOptions{All: true, Context: ctx,
		Filters: map[string][]string{"label": {LabelOwner}}})
	if err != nil {
		return 0, fmt.Errorf("reap: list containers: %w", err)
	}
	n := 0
	var errs []error
	for _, ct := range cs {
		if ownerAlive(ct.Labels[LabelOwner]) {
			continue
		}
		err := c.pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: ct.ID, Force: true, RemoveVolumes: true, Context: ctx})
		var missing *dc.NoSuchContainer
		if err != nil && !errors.As(err, &missing) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	nets, err := c.pool.Client.FilteredListNetworks(dc.NetworkFilterOpts{"label": {LabelOwner: true}})
	if err != nil {
		return n, fmt.Errorf("reap: list networks: %w", err)
	}
	for _, nw := range nets {
		if !ownerAlive(nw.Labels[LabelOwner]) {
			errs = append(errs, ignoreMissingNetwork(c.pool.Client.RemoveNetwork(nw.ID)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("reap: %w", err)
	}
	return n, nil
}

func ignoreMissingNetwork(err error) error {
	var missing *dc.NoSuchNetwork
	if errors.As(err, &missing) {
		return nil
	}
	return err
}

// ownerAlive says whether the PID in an owner label still runs. A label
// that is not a PID counts as alive: never remove what we cannot judge.
// The label carries the process start time as well, so a PID reused by an
// unrelated process does not keep the dead run's containers.
func ownerAlive(label string) bool {
	pid, start, ok := parseOwner(label)
	if !ok {
		return true
	}
	if err := syscall.Kill(pid, 0); err != nil && errors.Is(err, syscall.ESRCH) {
		return false
	}
	return start == "" || processStart(pid) == start
}

// ownerLabel is this process's owner label: "PID/start-time".
func ownerLabel() string {
	pid := os.Getpid()
	return strconv.Itoa(pid) + "/" + processStart(pid)
}
