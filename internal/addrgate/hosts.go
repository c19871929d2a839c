package addrgate

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"strings"
)

// maxHostsFile bounds what is read of a hosts file: a real one is a few
// kilobytes, and the gate must not read /dev/zero without end.
const maxHostsFile = 4 << 20

// readHosts parses a hosts file: "IP name [alias...]" per line, "#"
// starting a comment. Names are compared case-insensitively and without a
// trailing dot; a name on several lines has all their addresses, in file
// order (the order the system's resolver returns them). A missing file is
// an empty one: loopback names still work.
func readHosts(path string) (map[string][]netip.Addr, error) {
	out := map[string][]netip.Addr{}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxHostsFile))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		ip, ok := literal(fields[0])
		if !ok {
			continue
		}
		for _, name := range fields[1:] {
			n := normalize(name)
			if n == "" || containsAddr(out[n], ip) {
				continue
			}
			out[n] = append(out[n], ip)
		}
	}
	return out, sc.Err()
}

func containsAddr(list []netip.Addr, ip netip.Addr) bool {
	for _, x := range list {
		if x == ip {
			return true
		}
	}
	return false
}
