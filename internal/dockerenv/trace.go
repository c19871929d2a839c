package dockerenv

import (
	"fmt"
	"os"
	"time"
)

// traceOn prints how long each start-up step of a container or a target
// takes (IDEMCHAOS_DOCKER_TRACE=1), to see where a run's set-up goes.
var traceOn = os.Getenv("IDEMCHAOS_DOCKER_TRACE") != ""

// Trace, when IDEMCHAOS_DOCKER_TRACE is set, prints what took how long
// since start to stderr.
func Trace(what string, start time.Time) {
	if traceOn {
		fmt.Fprintf(os.Stderr, "dockertrace %-28s %6.0f ms\n", what, float64(time.Since(start).Microseconds())/1000)
	}
}
