//go:build !unix

package driver

import "syscall"

// peeker cannot peek without blocking here: the request finds out.
type peeker struct{}

func newPeeker(syscall.RawConn) *peeker { return nil }

func (p *peeker) alive(bool) bool { return true }

// writer is not needed here: writeWait writes, and the read waits.
type writer struct{}

func newWriter(syscall.RawConn) *writer { return nil }

// writeWait writes b to c.
func (c *conn) writeWait(b []byte) error {
	_, err := c.nc.Write(b)
	return err
}
