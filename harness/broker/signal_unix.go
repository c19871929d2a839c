//go:build unix

package broker

import "syscall"

// terminate asks a consumer to stop after the message in hand.
var terminate = syscall.SIGTERM
