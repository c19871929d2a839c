package faults

func init() { Register("reject", func() Fault { return &Reject{} }) }

// Reject answers the attempts it hits with a permanent 4xx without
// forwarding them: re-sending the same request can never change the
// answer, so a correct client does not. Client scenarios only.
type Reject struct {
	// Status is 422 (default), 400, 401, 403 or 404.
	Status     int `yaml:"status" json:"status" jsonschema:"enum=422,enum=400,enum=401,enum=403,enum=404"`
	errorShape `yaml:",inline"`
	proxyAnswer
	_ struct{}
}

var (
	_ ClientPath = (*Reject)(nil)
	_ ClientOnly = (*Reject)(nil)
)

// Kind implements [Fault].
func (*Reject) Kind() string { return "reject" }

// Validate implements [Fault].
func (f *Reject) Validate() error {
	switch f.Status {
	case 0:
		f.Status = 422
	case 400, 401, 403, 404, 422:
	default:
		return invalid(f.Kind(), "status must be 400, 401, 403, 404 or 422, got %d", f.Status)
	}
	return nil
}

// rejectCodes are the reference's error codes of the permanent statuses.
var rejectCodes = map[int]string{400: "invalid_body", 401: "unauthorized", 403: "forbidden", 404: "not_found", 422: "idempotency_key_reused"}

// ClientAnswer implements [ClientPath].
func (f *Reject) ClientAnswer() Answer {
	return Answer{Status: f.Status, Code: rejectCodes[f.Status], Headers: f.headers(), Body: f.Body}
}
