package recorder

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/url"
	"strings"
)

// Redacted replaces a redacted value.
const Redacted = "[redacted]"

// redactBody replaces the values of the configured field names in a JSON
// or form body, at any depth. Other bodies, and bodies that name none of
// the fields, are kept byte for byte: byte identity is what replay checks
// judge, so a body is only re-encoded when it must be.
func (r *Recorder) redactBody(contentType string, body []byte) []byte {
	if len(body) == 0 || len(r.redact) == 0 {
		return body
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		var v any
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		if d.Decode(&v) != nil {
			return body
		}
		if !r.redactJSON(v) {
			return body
		}
		b, err := json.Marshal(v)
		if err != nil {
			return body
		}
		return b
	case mt == "application/x-www-form-urlencoded":
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return body
		}
		hit := false
		for k := range vals {
			if r.redactField(k) {
				vals[k] = []string{Redacted}
				hit = true
			}
		}
		if !hit {
			return body
		}
		return []byte(vals.Encode())
	}
	return body
}

// redactField matches a field name, or a form key's last bracketed part
// (card[number] matches "number").
func (r *Recorder) redactField(name string) bool {
	if r.redact[strings.ToLower(name)] {
		return true
	}
	if i := strings.LastIndexByte(name, '['); i >= 0 && strings.HasSuffix(name, "]") {
		return r.redact[strings.ToLower(name[i+1:len(name)-1])]
	}
	return false
}

func (r *Recorder) redactJSON(v any) bool {
	hit := false
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if r.redact[strings.ToLower(k)] {
				t[k] = Redacted
				hit = true
				continue
			}
			hit = r.redactJSON(e) || hit
		}
	case []any:
		for _, e := range t {
			hit = r.redactJSON(e) || hit
		}
	}
	return hit
}
