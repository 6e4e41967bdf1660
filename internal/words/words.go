// Package words writes counts the way a sentence reads them: "1 node", "2 nodes", never
// "1 nodes" or "node(s)".
package words

import "fmt"

// Count is n and the noun, plural unless n is 1: the noun's plural is its singular with an s,
// which holds for every noun the program counts (node, GPU, resource, approval, reviewer,
// warning, placeholder).
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// CountIs is Count with the verb that agrees with it: "1 protected resource is", "2 protected
// resources are".
func CountIs(n int, noun string) string {
	if n == 1 {
		return Count(n, noun) + " is"
	}
	return Count(n, noun) + " are"
}
