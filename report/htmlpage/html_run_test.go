package htmlpage

import (
	"bytes"
	"html/template"
	"testing"
)

// The run sections are written by hand; their escaping must be the one
// html/template applies to the same strings in text, in a quoted attribute
// and in an SVG <title> (a tooltip), for every ASCII byte and then some.
func TestHTMLEscaper_IsTemplates(t *testing.T) {
	t.Parallel()
	var all []byte
	for c := range 0x80 {
		all = append(all, byte(c))
	}
	tmpl := template.Must(template.New("").Parse(`<p title="{{.}}">{{.}}</p><svg><title>{{.}}</title></svg>`))
	for _, s := range []string{string(all), `"><img src=x onerror=alert(1)>`, "<script>a+b</script>", "k-9 ‹é› \u2028 \xff", ""} {
		var want bytes.Buffer
		if err := tmpl.Execute(&want, s); err != nil {
			t.Fatal(err)
		}
		e := htmlEscaper.Replace(s)
		if got := `<p title="` + e + `">` + e + `</p><svg><title>` + e + `</title></svg>`; got != want.String() {
			t.Errorf("escaping %q:\n got %q\nwant %q", s, got, want.String())
		}
	}
}
