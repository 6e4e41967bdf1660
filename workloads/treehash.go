package workloads

import (
	_ "embed"
	"strings"
)

// treeHashLibrary is treehash.sh: tree_hash and verify_tree, for the scripts that run or ship
// code from the shared volume.
//
//go:embed treehash.sh
var treeHashLibrary string

// withLibrary puts lib's functions into script, after the script's `#!` and `set` lines (both
// files start with them; the library's are dropped).
func withLibrary(script, lib string) string {
	head := strings.SplitAfterN(script, "\n", 3)
	body := strings.SplitAfterN(lib, "\n", 3)
	return head[0] + head[1] + body[2] + head[2]
}
