package history_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

// encoding/json speaks the format's one codec: an Event marshals to the
// line the Writer writes and unmarshals as the Reader reads, over every
// line of every golden history (every event type the format has), also
// inside another struct.
func TestEventJSON_IsTheReferenceCodec(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "histories", "*", "*.jsonl"))
	if err != nil || len(files) < 50 {
		t.Fatalf("goldens: %d (%v)", len(files), err)
	}
	types := map[history.Type]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rd := history.NewReader(bytes.NewReader(b))
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, history.MaxLineBytes)
		for sc.Scan() {
			line := sc.Bytes()
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var want history.Event
			if err := rd.Next(&want); errors.Is(err, history.ErrTruncated) {
				break // a golden cut off mid-line: its last line is no event
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			types[want.Type] = true
			var got history.Event
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatalf("%s: json.Unmarshal(%s): %v", f, line, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: json.Unmarshal gives %+v, the Reader %+v", f, got, want)
			}
			// encoding/json escapes <, > and & in what a marshaler
			// returns unless told not to: the same JSON either way.
			var enc bytes.Buffer
			je := json.NewEncoder(&enc)
			je.SetEscapeHTML(false)
			if err := je.Encode(want); err != nil {
				t.Fatal(err)
			}
			if w := append(history.AppendEvent(nil, &want), '\n'); !bytes.Equal(enc.Bytes(), w) {
				t.Errorf("%s: encoding/json gives %s, the Writer %s", f, enc.Bytes(), w)
			}
		}
	}
	for _, ty := range []history.Type{history.TypeMeta, history.TypeInvoke, history.TypeOK, history.TypeInfo, history.TypeFault, history.TypeEffect, history.TypeStep} {
		if !types[ty] {
			t.Errorf("no golden has a %s event: the codec went untested on it", ty)
		}
	}
	in := struct {
		Meta history.Event `json:"meta"`
	}{history.Event{Type: history.TypeMeta, V: 1, Seed: 7, EffectsUnread: true}}
	b, err := json.Marshal(in)
	if err != nil || string(b) != `{"meta":{"type":"meta","v":1,"seed":7,"effects_recorded":false}}` {
		t.Errorf("an Event inside a struct marshals to %s (%v)", b, err)
	}
}

// json.Unmarshal refuses what the Reader refuses, with its reasons.
func TestEventJSON_RefusesWhatTheReaderRefuses(t *testing.T) {
	t.Parallel()
	var e history.Event
	err := json.Unmarshal([]byte(`{"type":"invoke","op":1,"op":2,"ns":1}`), &e)
	if !errors.Is(err, history.ErrAmbiguous) || !strings.Contains(err.Error(), `"op"`) {
		t.Errorf("a duplicated key: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"type":"ok","op":1,"ns":1}`), &e); err == nil || !strings.Contains(err.Error(), `needs "resp"`) {
		t.Errorf("an ok event without resp: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"type":"budget","max_requests":-1}`), &e); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("a negative budget: %v", err)
	}
}
