package runenv

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// signals are the signals that end a run cleanly: Ctrl-C, a polite kill,
// and a terminal that went away.
var signals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// CloseOnSignal makes SIGINT, SIGTERM and SIGHUP (a closed terminal, as
// for any command: like SIGTERM) close the run (stopping every
// registered resource and removing the directory, bounded by grace) and then
// terminate the process with the same signal, so the parent sees the usual
// "killed by SIGINT" status. A second signal during the cleanup ends the
// process at once; its children still die (parent-death signal) and the
// next run reaps the directory. The returned stop function uninstalls the
// handler.
func (r *Run) CloseOnSignal(grace time.Duration) (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, signals...)
	quit := make(chan struct{})
	go func() {
		var sig os.Signal
		select {
		case sig = <-ch:
		case <-quit:
			return
		}
		go func() {
			<-ch
			os.Exit(128 + int(sig.(syscall.Signal)))
		}()
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		_ = r.Close(ctx)
		cancel()
		signal.Reset(signals...)
		_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
		})
	}
}
