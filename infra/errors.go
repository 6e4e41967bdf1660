package infra

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// FieldError is one problem with the stack configuration, about one config key.
type FieldError struct {
	// Key is the config path as a user types it: `gpu.nodes`, `gcp:region`.
	Key string
	// Message says what is wrong with the value and what is allowed.
	Message string
}

func (e FieldError) Error() string {
	return e.Key + ": " + e.Message
}

// Errors collects every configuration problem, so that a user fixes them all in one go.
type Errors []FieldError

// Add records a problem with key.
func (e *Errors) Add(key, format string, args ...any) {
	*e = append(*e, FieldError{Key: key, Message: fmt.Sprintf(format, args...)})
}

// Has reports whether a problem about key has been recorded.
func (e Errors) Has(key string) bool {
	for _, fe := range e {
		if fe.Key == key {
			return true
		}
	}
	return false
}

// Error lists the problems one per line, `key: message`.
func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, fe := range e {
		lines[i] = fe.Error()
	}
	return "invalid stack configuration:\n" + strings.Join(lines, "\n")
}

// Err returns e as an error, or nil when there is no problem.
func (e Errors) Err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// quote renders a config value for an error message, short enough for one line.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strconv.Quote(s)
}

// rawText is a JSON value as the user typed it: a string without its JSON quotes.
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
