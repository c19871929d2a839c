package runenv

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// CloseOnSignal makes SIGINT and SIGTERM close the run (stopping every
// registered resource and removing the directory, bounded by grace) and then
// terminate the process with the same signal, so the parent sees the usual
// "killed by SIGINT" status. A second signal during the cleanup ends the
// process at once; its children still die (parent-death signal) and the
// next run reaps the directory. The returned stop function uninstalls the
// handler.
func (r *Run) CloseOnSignal(grace time.Duration) (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
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
		signal.Reset(syscall.SIGINT, syscall.SIGTERM)
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
