package proxy

import (
	"net"

	"golang.org/x/sys/unix"
)

// sentAcked reads from the kernel how many bytes of data c has sent and how
// many the peer acknowledged (the SYN counts as one); ok is false once c is
// closed or the kernel cannot say.
func sentAcked(c *net.TCPConn) (sent, acked uint64, ok bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		return 0, 0, false
	}
	return info.Bytes_sent, info.Bytes_acked, true
}
