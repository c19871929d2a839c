package htmlpage_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/report/htmlpage"
)

// TestWriteHTML_ValidUTF8WhateverTheServiceSent: a service answers with
// bytes that are not UTF-8 and with control characters (in the body, in an
// effect id, in the error of a failed attempt); the page stays valid UTF-8
// with no control character but tab, newline and carriage return, and shows
// a C0 control as its visible picture.
func TestWriteHTML_ValidUTF8WhateverTheServiceSent(t *testing.T) {
	t.Parallel()
	body := base64.StdEncoding.EncodeToString([]byte("{\"id\":\"o-1\x01\x1b[31m\xff\xfe\xc3\"}"))
	jsonl := `{"type":"meta","v":1,"scenario":"s","seed":1,"effects_recorded":true}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k-1","attempt":1,"client":1,"ns":1000000,"req":{"method":"POST","path":"/v1/orders","body":"x"}}
{"type":"info","op":1,"ns":2000000,"error":"reset \u0007 \u0085 by peer"}
{"type":"invoke","op":2,"intent":"i1","tenant":"t1","key":"k-1","attempt":2,"client":1,"ns":3000000,"req":{"method":"POST","path":"/v1/orders","body":"x"}}
{"type":"ok","op":2,"ns":4000000,"resp":{"status":201,"body_b64":"` + body + `"}}
{"type":"effect","tenant":"t1","key":"k-1","effect":"order o-1\u0001\u007f","ns":5000000}
{"type":"effect","tenant":"t1","key":"k-1","effect":"order o-2","ns":5000000}
`
	h := loadHistory(t, jsonl)
	rep := report.New([]report.Run{report.FromCheck("h.jsonl", h, checkers.Default().Check(h, h.Effects))})
	tls := htmlpage.Timelines(rep, map[string]*history.History{"h.jsonl": h})
	if len(tls) == 0 {
		t.Fatalf("no timeline drawn (verdict %s): the bytes would not reach the page", rep.Verdict)
	}
	page := renderHTML(t, rep, tls)
	if !utf8.ValidString(page) {
		t.Error("the page is not valid UTF-8")
	}
	for i, r := range page {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (r >= 0x7f && r <= 0x9f) {
			t.Fatalf("control character U+%04X at byte %d: %q", r, i, page[max(i-40, 0):min(i+40, len(page))])
		}
	}
	for _, want := range []string{"o-1␁", "␛[31m", "reset ␇"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
}
