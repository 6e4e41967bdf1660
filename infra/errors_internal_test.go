package infra

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A value in an error message is quoted whole up to 80 characters; a longer one is cut to 77 and
// "...", so that the message stays on one line.
func TestAQuotedValueIsCutPast80Characters(t *testing.T) {
	eighty := strings.Repeat("a", 80)
	assert.Equal(t, `"`+eighty+`"`, quote(eighty))
	assert.Equal(t, `"`+strings.Repeat("a", 77)+`..."`, quote(eighty+"b"))
	assert.Equal(t, `"line\nbreak"`, quote("line\nbreak"), "escaped, as Go quotes it")
}
