package dockerenv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemchaos/idemchaos/internal/dockerenv"
	"github.com/idemchaos/idemchaos/internal/proxy"
)

func TestImages_RebuildFindsTheSameImagesByContent(t *testing.T) {
	c, im := images(t)
	ctx := context.Background()
	again, err := c.BuildImages(ctx, dockerenv.BuildOptions{})
	require.NoError(t, err)
	assert.Equal(t, im, again, "the same inputs name the same images")
	for role, ref := range map[string]string{"postgres": im.Postgres, "toxiproxy": im.Toxiproxy, "reference": im.Reference} {
		img, err := c.API().InspectImage(ref)
		require.NoError(t, err, ref)
		assert.Equal(t, role, img.Config.Labels[dockerenv.LabelImage], ref)
		assert.NotEmpty(t, img.Config.Labels[dockerenv.LabelHash], ref)
	}
}

func TestEnv_StandbyStreamsProxiesForwardAndCloseRemovesEverything(t *testing.T) {
	c, im := images(t)
	ctx := context.Background()
	e, err := c.Start(ctx, dockerenv.Config{Images: im, Standby: true})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = e.Close(context.Background())
		}
	})
	require.NoError(t, e.CreateDatabase(ctx, "shop"))

	// Written on the primary through a proxy published on 127.0.0.1, read
	// back on the real standby.
	addr, err := e.Proxies().CreateProxy(ctx, "pg", "", e.Primary().NetAddr(5432))
	require.NoError(t, err)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, addr, "proxies the harness reaches are on loopback")
	conn, err := pgx.Connect(ctx, "postgres://postgres@"+addr+"/shop?sslmode=disable")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (42)")
	require.NoError(t, err)
	_ = conn.Close(ctx)
	// The standby has the database only once it has replayed its
	// creation: connecting is part of what is waited for.
	var sb *pgx.Conn
	defer func() {
		if sb != nil {
			_ = sb.Close(ctx)
		}
	}()
	var v int
	require.Eventually(t, func() bool {
		if sb == nil {
			if sb, err = pgx.Connect(ctx, "postgres://postgres@"+e.Standby().HostAddr()+"/shop?sslmode=disable"); err != nil {
				sb = nil
				return false
			}
		}
		return sb.QueryRow(ctx, "SELECT v FROM t").Scan(&v) == nil
	}, 30*time.Second, 20*time.Millisecond, "the standby replays the primary's WAL")
	assert.Equal(t, 42, v)
	var inRecovery bool
	require.NoError(t, sb.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery))
	assert.True(t, inRecovery, "the standby is a standby")

	// A fault on the proxy acts on the database path.
	require.NoError(t, e.Proxies().AddToxic(ctx, "pg", proxy.Toxic{Name: "slow", Type: "latency", Stream: proxy.Upstream,
		Attributes: map[string]any{"latency": 300}}))
	start := time.Now()
	slow, err := pgx.Connect(ctx, "postgres://postgres@"+addr+"/shop?sslmode=disable")
	require.NoError(t, err)
	_ = slow.Close(ctx)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "the latency toxic delays the connection")

	run := e.Run()
	require.NoError(t, e.Close(ctx))
	closed = true
	left, err := c.API().ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {dockerenv.LabelRun + "=" + run}}})
	require.NoError(t, err)
	assert.Empty(t, left, "Close removes every container of the run")
	nets, err := c.API().FilteredListNetworks(dc.NetworkFilterOpts{"label": {dockerenv.LabelRun + "=" + run: true}})
	require.NoError(t, err)
	assert.Empty(t, nets, "Close removes the network")
}

func TestReap_RemovesWhatADeadHarnessLeft(t *testing.T) {
	c, im := images(t)
	ctx := context.Background()
	// What a harness killed with SIGKILL leaves: a labelled network and
	// container whose owner process is gone (PID 0x7ffffffe never runs).
	labels := map[string]string{dockerenv.LabelRun: "idemchaos-reaptest", dockerenv.LabelOwner: "2147483646/1"}
	nw, err := c.API().CreateNetwork(dc.CreateNetworkOptions{Name: "idemchaos-reaptest-" + time.Now().Format("150405.000"), Labels: labels})
	require.NoError(t, err)
	ct, err := c.API().CreateContainer(dc.CreateContainerOptions{Config: &dc.Config{Image: im.Toxiproxy, Labels: labels},
		HostConfig: &dc.HostConfig{NetworkMode: nw.Name}})
	require.NoError(t, err)
	require.NoError(t, c.API().StartContainer(ct.ID, nil))
	// Every idemchaos on this daemon reaps at its start, so another test
	// binary's reaper may be removing them as this one looks (its Reap
	// then counts nothing, and skips the network still in use): what must
	// hold is that both go, reaped again until they have.
	reaped := 0
	var missing *dc.NoSuchContainer
	require.Eventually(t, func() bool {
		n, err := c.Reap(ctx)
		if err != nil {
			return false
		}
		reaped += n
		_, cerr := c.API().InspectContainer(ct.ID)
		_, nerr := c.API().NetworkInfo(nw.ID)
		return errors.As(cerr, &missing) && nerr != nil
	}, 30*time.Second, 100*time.Millisecond, "the dead harness's container and network are reaped")
	t.Logf("this test's reaper removed %d container(s); the rest went to another's", reaped)
}

func TestContainer_KillIsASIGKILLAndRestartComesBack(t *testing.T) {
	c, im := images(t)
	ctx := context.Background()
	e, err := c.Start(ctx, dockerenv.Config{Images: im})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	tp, err := e.RunContainer(ctx, dockerenv.ContainerSpec{Name: "tp", Image: im.Toxiproxy, Port: 8474,
		Cmd: []string{"-host=0.0.0.0"}, Ready: dockerenv.HTTPReady("/version")})
	require.NoError(t, err)
	require.NoError(t, tp.Kill(ctx))
	select {
	case <-tp.Exited():
	default:
		require.FailNow(t, "Kill returned before the container stopped")
	}
	info, err := c.API().InspectContainer(tp.ID())
	require.NoError(t, err)
	assert.Equal(t, 137, info.State.ExitCode, "killed by SIGKILL (128+9)")
	require.NoError(t, tp.Restart(ctx))
	require.NoError(t, dockerenv.HTTPReady("/version")(ctx, tp), "the same published address answers after the restart")
	select {
	case <-tp.Exited():
		require.FailNow(t, "Exited is closed for the new run")
	default:
	}
}

func TestPod_DiscardedPodsPauseServesTheNextPodsFreshContainer(t *testing.T) {
	c, im := images(t)
	ctx := context.Background()
	// The toxiproxy image idles well enough as a pause container (its API
	// listens on 8474 inside the namespace, not published).
	e, err := c.Start(ctx, dockerenv.Config{Images: im, PauseImage: im.Toxiproxy})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = e.Close(context.Background())
		}
	})
	pod := func(name string) *dockerenv.Container {
		p, err := e.RunContainer(ctx, dockerenv.ContainerSpec{Name: name, Image: im.Toxiproxy, Port: 9000, Pod: true,
			Cmd: []string{"-host=0.0.0.0", "-port=9000"}, Ready: dockerenv.HTTPReady("/version")})
		require.NoError(t, err)
		return p
	}
	a := pod("a")
	<-a.Discard()
	_, err = c.API().InspectContainer(a.ID())
	var missing *dc.NoSuchContainer
	require.ErrorAs(t, err, &missing, "a discarded pod's container is removed")
	assert.Error(t, dockerenv.HTTPReady("/version")(ctx, a), "nothing answers at the address once the container is gone")

	b := pod("b")
	assert.NotEqual(t, a.ID(), b.ID(), "every pod's container is new")
	assert.Equal(t, a.HostAddr(), b.HostAddr(), "the next pod runs in the idle pause container's namespace")
	require.NoError(t, b.Kill(ctx))
	assert.Error(t, dockerenv.HTTPReady("/version")(ctx, b), "a killed pod refuses at once")
	require.NoError(t, b.Restart(ctx))

	run := e.Run()
	<-b.Discard()
	require.NoError(t, e.Close(ctx))
	closed = true
	left, err := c.API().ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {dockerenv.LabelRun + "=" + run}}})
	require.NoError(t, err)
	assert.Empty(t, left, "Close removes every container, idle pause containers and spares too")
}
