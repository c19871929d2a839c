package dockerenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
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
	c, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := c.Reap(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// dial reaches the daemon without reaping.
func dial(ctx context.Context) (*Client, error) {
	// The daemon must be on this machine: the ports it publishes on "its"
	// loopback are this machine's only then, and the API calls themselves
	// would leave it otherwise.
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
	return &Client{pool: pool}, nil
}

// API is the underlying go-dockerclient, for callers that need more.
func (c *Client) API() *dc.Client { return c.pool.Client }

// Reap removes the containers and networks of environments whose owner
// process no longer runs on this machine, and returns how many containers
// it removed.
func (c *Client) Reap(ctx context.Context) (int, error) {
	n, _, err := c.reap(ctx)
	return n, err
}

// reap is [Client.Reap], counting the networks too.
func (c *Client) reap(ctx context.Context) (containers, networks int, err error) {
	cs, err := c.pool.Client.ListContainers(dc.ListContainersOptions{All: true, Context: ctx,
		Filters: map[string][]string{"label": {LabelOwner}}})
	if err != nil {
		return 0, 0, fmt.Errorf("reap: list containers: %w", err)
	}
	n, elsewhere := 0, 0
	var errs []error
	for _, ct := range cs {
		if ownerAlive(ct.Labels[LabelOwner]) {
			continue
		}
		err := c.pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: ct.ID, Force: true, RemoveVolumes: true, Context: ctx})
		var missing *dc.NoSuchContainer
		switch {
		case removedElsewhere(err):
			// Another idemchaos on this daemon (every command reaps at
			// its start) is removing it: it goes, and is not ours to count.
			elsewhere++
			continue
		case err != nil && !errors.As(err, &missing):
			errs = append(errs, err)
			continue
		}
		n++
	}
	nets, err := c.pool.Client.FilteredListNetworks(dc.NetworkFilterOpts{"label": {LabelOwner: true}})
	if err != nil {
		return n, 0, fmt.Errorf("reap: list networks: %w", err)
	}
	for _, nw := range nets {
		if !ownerAlive(nw.Labels[LabelOwner]) {
			if err := ignoreMissingNetwork(c.pool.Client.RemoveNetwork(nw.ID)); err != nil {
				if elsewhere > 0 && inUse(err) {
					// Its containers are still being removed by the
					// other reaper: a later pass (or run) takes it.
					continue
				}
				errs = append(errs, err)
				continue
			}
			networks++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return n, networks, fmt.Errorf("reap: %w", err)
	}
	return n, networks, nil
}

// removedElsewhere says a container's removal failed because another
// client's removal of it is under way (the daemon's 409).
func removedElsewhere(err error) bool {
	var de *dc.Error
	return errors.As(err, &de) && de.Status == http.StatusConflict && strings.Contains(de.Message, "already in progress")
}

// inUse says a network's removal failed because containers are still
// attached to it (the daemon's 403).
func inUse(err error) bool {
	var de *dc.Error
	return errors.As(err, &de) && de.Status == http.StatusForbidden && strings.Contains(de.Message, "active endpoints")
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
