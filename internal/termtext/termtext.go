// Package termtext makes text that came from elsewhere (a remote API's answer, a file the user
// was handed) safe to print on a terminal.
package termtext

import (
	"fmt"
	"strings"
	"unicode"
)

// Clean is s with every control character (an escape sequence's ESC, a carriage return that
// overwrites the line, a bell, a newline that forges another line) and every bidirectional
// formatting character (which reorders what the reader sees) written as a \uXXXX escape: a
// remote answer printed on a terminal can neither move the cursor, retitle the window nor hide
// text.
func Clean(s string) string {
	if strings.IndexFunc(s, unsafe) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafe(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// CleanAll is Clean of each element.
func CleanAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = Clean(s)
	}
	return out
}

func unsafe(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}
