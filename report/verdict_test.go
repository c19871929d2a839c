package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
)

// One intent, acknowledged, one effect, no crash: durable-ack judged
// nothing. It must say "not exercised" in every form, never PASS.
const noCrash = `{"type":"meta","v":1,"effects_recorded":true}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k1","ns":1,"req":{"method":"POST","path":"/o","body":"a"}}
{"type":"ok","op":1,"ns":2,"resp":{"status":201,"body":"{\"id\":\"o-1\"}"}}
{"type":"effect","tenant":"t1","key":"k1","effect":"order o-1","ns":9}
`

func notExercisedReport(t *testing.T) report.Report {
	t.Helper()
	h, err := history.Load(strings.NewReader(noCrash), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return report.New([]report.Run{report.FromCheck("h.jsonl", h, checkers.Default().Check(h, h.Effects))})
}

func TestNotExercised_Text(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	report.WriteText(&buf, notExercisedReport(t))
	out := buf.String()
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "PASS") && strings.Contains(line, "checked 0") {
			t.Errorf("checked 0 printed as a pass: %q", line)
		}
	}
	if !strings.Contains(out, "NOT EXERCISED durable-ack") || !strings.Contains(out, "no crash in the history") {
		t.Errorf("durable-ack must say not exercised, with why:\n%s", out)
	}
	if !strings.Contains(out, "PASS          exactly-once         checked 1") {
		t.Errorf("exactly-once judged one intent and passed:\n%s", out)
	}
}

func TestNotExercised_JSON(t *testing.T) {
	t.Parallel()
	rep := notExercisedReport(t)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Runs []struct {
			Steps []struct {
				Invariants []struct {
					Name, Verdict string
					Checked       int
				}
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, iv := range got.Runs[0].Steps[0].Invariants {
		if iv.Checked == 0 && iv.Verdict == "pass" {
			t.Errorf("%s: checked 0 with verdict pass", iv.Name)
		}
		if iv.Name == "durable-ack" && iv.Verdict != "not-exercised" {
			t.Errorf("durable-ack verdict %q, want not-exercised", iv.Verdict)
		}
	}
	if rep.ExitCode != 0 {
		t.Errorf("nothing failed: exit %d, want 0", rep.ExitCode)
	}
}

func TestNotExercised_JUnitSkipped(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := report.WriteJUnit(&buf, notExercisedReport(t)); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Skipped int `xml:"skipped,attr"`
		Suites  []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	skipped := map[string]string{}
	for _, c := range got.Suites[0].Cases {
		if c.Skipped != nil {
			skipped[c.Name] = c.Skipped.Message
		}
	}
	if !strings.Contains(skipped["durable-ack"], "not exercised") || got.Skipped != len(skipped) {
		t.Errorf("durable-ack must be <skipped> (got %v, total %d):\n%s", skipped, got.Skipped, buf.String())
	}
	if _, ok := skipped["exactly-once"]; ok {
		t.Error("exactly-once checked an intent: not skipped")
	}
}
