//go:build !unix

package broker

import "os"

// terminate asks a consumer to stop; where only a kill exists it fails and
// the consumer is killed.
var terminate = os.Interrupt
