package bench

import (
	"context"
	"errors"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/docker"
	"github.com/idemchaos/idemchaos/internal/dockerenv"
)

// StartupResult is the environment start-up section: harness.Open of the
// local environment from nothing (a new run directory, so initdb
// included), as every `idemchaos demo` or `run` pays it, and its close.
// Times are seconds.
type StartupResult struct {
	Runs int
	// Primary is a Postgres primary and the in-process Toxiproxy;
	// PrimaryStandby adds a streaming hot standby.
	Primary, PrimaryStandby Summary
	// Close is the teardown of either (stop, remove the directories).
	Close Summary
	// Docker is the docker environment from locally built images: primary
	// + streaming standby + toxiproxy-server + one reference target
	// (DockerEnv alone, DockerRef the reference on top), and its close.
	// DockerErr says why it was not measured.
	Docker, DockerEnv, DockerRef, DockerClose Summary
	DockerErr                                 string
}

func (b *bench) startup(ctx context.Context) error {
	res := &StartupResult{}
	b.rep.Startup = res
	var prim, both, closes []float64
	for i := range b.opts.StartupRepeats {
		for _, standby := range []bool{false, true} {
			start := time.Now()
			_, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: harness.EnvLocal, Standby: standby})
			if err != nil {
				return err
			}
			open := time.Since(start)
			start = time.Now()
			if err := closeEnv(context.WithoutCancel(ctx)); err != nil {
				return err
			}
			closes = append(closes, time.Since(start).Seconds())
			if standby {
				both = append(both, open.Seconds())
			} else {
				prim = append(prim, open.Seconds())
			}
			b.logf("startup %d/%d: standby=%v open %s", i+1, b.opts.StartupRepeats, standby, open.Round(time.Millisecond))
		}
		res.Runs = i + 1
		res.Primary, res.PrimaryStandby, res.Close = Summarize(prim), Summarize(both), Summarize(closes)
	}
	if err := b.dockerStartup(ctx, res); err != nil {
		res.DockerErr = err.Error()
		b.logf("startup docker: %v", err)
	}
	return nil
}

// dockerStartup measures the docker environment's start-up from images
// built (or found by content hash) beforehand, which is not timed.
func (b *bench) dockerStartup(ctx context.Context, res *StartupResult) error {
	c, err := dockerenv.Connect(ctx)
	if err != nil {
		return err
	}
	im, err := c.BuildImages(ctx, dockerenv.BuildOptions{})
	if err != nil {
		return err
	}
	var total, envs, refs, closes []float64
	for i := range b.opts.StartupRepeats {
		start := time.Now()
		e, err := docker.Open(ctx, docker.Options{Standby: true,
			PGImage: im.Postgres, ToxiproxyImage: im.Toxiproxy, ReferenceImage: im.Reference})
		if err != nil {
			return err
		}
		closeEnv := e.Close
		opened := time.Since(start)
		stop, err := e.StartReference(ctx)
		if err != nil {
			_ = closeEnv(context.WithoutCancel(ctx))
			return err
		}
		all := time.Since(start)
		start = time.Now()
		err = errors.Join(stop(context.WithoutCancel(ctx)), closeEnv(context.WithoutCancel(ctx)))
		if err != nil {
			return err
		}
		closes = append(closes, time.Since(start).Seconds())
		total, envs, refs = append(total, all.Seconds()), append(envs, opened.Seconds()), append(refs, (all-opened).Seconds())
		b.logf("startup docker %d/%d: open %s, reference %s", i+1, b.opts.StartupRepeats, opened.Round(time.Millisecond), (all - opened).Round(time.Millisecond))
		res.Docker, res.DockerEnv, res.DockerRef, res.DockerClose = Summarize(total), Summarize(envs), Summarize(refs), Summarize(closes)
	}
	return nil
}
