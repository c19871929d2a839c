package driver

import "errors"

// ErrBudget is wrapped when the run stopped issuing requests because it
// reached its request budget ([Config.MaxRequests]).
var ErrBudget = errors.New("request budget exhausted")

// ErrConfig is wrapped by configuration errors found before anything is sent.
var ErrConfig = errors.New("invalid driver configuration")
