package harness

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// metaLine is a history's first line, which says whether the effects of
// every request so far were read into the history. It is written once at
// the start and rewritten in place as that changes: "unread" while a step
// sends (a run interrupted then keeps a history that says so), "read"
// once the step's effects are recorded. Both forms are padded to one
// length (JSON allows the spaces), so a rewrite never moves a byte of the
// events after it.
type metaLine struct {
	f            *os.File
	read, unread []byte
	state        bool // the form on disk: true for read
}

// writeMeta writes the meta event of a run judged by contract and the
// invariants named, that reads its effects (withOracle) or does not, as
// unread, to the start of f; client, for a client run, is its client's
// contract.
func writeMeta(f *os.File, scenario string, seed int64, start time.Time, contract *history.Contract, invariants []string, withOracle bool, client *history.ClientContract) (*metaLine, error) {
	e := history.Event{Type: history.TypeMeta, V: history.Version, Scenario: scenario, Seed: seed,
		Started: start.UTC().Format(time.RFC3339Nano), Contract: contract, Invariants: invariants, EffectsUnread: true}
	if client != nil {
		// A client run: its client, not the upstream, is judged.
		e.Mode, e.ClientContract = history.ModeClient, client
	}
	unread := history.AppendEvent(nil, &e)
	m := &metaLine{f: f, unread: unread}
	if withOracle {
		e.EffectsRecorded, e.EffectsUnread = true, false
		m.read = history.AppendEvent(nil, &e)
		m.read, m.unread = pad(m.read, len(m.unread)), pad(m.unread, len(m.read))
	}
	// f is new: the line goes first, and the events follow it.
	if _, err := f.Write(append(m.unread, '\n')); err != nil {
		return nil, fmt.Errorf("write history: %w", err)
	}
	return m, nil
}

// pad inserts spaces before a JSON object's closing brace up to n bytes.
func pad(line []byte, n int) []byte {
	if len(line) >= n {
		return line
	}
	out := append([]byte{}, line[:len(line)-1]...)
	out = append(out, bytes.Repeat([]byte{' '}, n-len(line))...)
	return append(out, '}')
}

// set rewrites the meta line to say the effects are read, or not.
func (m *metaLine) set(read bool) error {
	if m == nil || m.read == nil || read == m.state {
		return nil
	}
	line := m.unread
	if read {
		line = m.read
	}
	if _, err := m.f.WriteAt(line, 0); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	m.state = read
	return nil
}
