//go:build tools

// Package tools pins the Pulumi CLI that the tests run the documented pulumi command lines with:
// `go install github.com/pulumi/pulumi/pkg/v3/cmd/pulumi` in this directory builds v3.274.1, the
// version of the SDK the program uses and of the CLI the workflows install. It is a module of its
// own, because pkg/v3 replaces a dependency (atotto/clipboard), which `go install pkg@version`
// refuses, and so that the program's go.mod stays as it is.
package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
