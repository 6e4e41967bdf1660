package clitest

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Command is one command a user is told to run, as the shell would run it.
type Command struct {
	// Source says where it was found (a file and line, an output's name).
	Source string
	// Text is the shell text it came from, placeholders replaced.
	Text string
	// Args are its words after the shell's expansion: variables take the values of Vars, a
	// command substitution is replaced by "x" (and is a Command of its own).
	Args []string
}

func (c Command) String() string { return c.Source + ": " + strings.Join(c.Args, " ") }

// Vars are the values the shell variables of documented commands take when they are checked:
// the names the README's setup uses, and "x" for any other.
var Vars = map[string]string{
	"PROJECT": "acme-rl", "NUMBER": "123456789012", "REPO": "acme/gke-rl", "REPO_ID": "123456789",
	"OWNER_ID": "987654321", "BUCKET": "acme-rl-checkpoints", "AGENT": "service-123456789012@gcp-sa-lustre.iam.gserviceaccount.com",
	"sa": "gke-rl-deploy", "role": "roles/container.admin", "HOME": "/home/user",
}

// placeholder is a documented placeholder such as `<bucket>` or `<a worker pod>`.
var placeholder = regexp.MustCompile(`<([A-Za-z][^<>\n]*)>`)

// fillPlaceholders replaces each `<words>` by `words` joined with dashes, a valid name for most
// arguments, so that the shell does not read it as a redirection.
func fillPlaceholders(s string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		words := strings.Fields(strings.ToLower(strings.Trim(m, "<>")))
		return strings.Join(words, "-")
	})
}

// ShellCommands parses text as bash and returns every simple command in it whose program is one
// of programs, including those in pipelines, lists, loops and command substitutions.
func ShellCommands(source, text string, programs ...string) ([]Command, error) {
	text = fillPlaceholders(text)
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), source)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	cfg := &expand.Config{
		Env: expand.FuncEnviron(func(name string) string {
			if name == "IFS" { // the shell's own, never "x"
				return " \t\n"
			}
			if v, ok := Vars[name]; ok {
				return v
			}
			return "x"
		}),
		CmdSubst: func(w io.Writer, _ *syntax.CmdSubst) error { _, err := io.WriteString(w, "x"); return err },
	}
	var cmds []Command
	var walkErr error
	syntax.Walk(file, func(node syntax.Node) bool {
		call, ok := node.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || walkErr != nil {
			return walkErr == nil
		}
		args, err := expand.Fields(cfg, call.Args...)
		if err != nil {
			walkErr = fmt.Errorf("%s: %w", source, err)
			return false
		}
		for _, p := range programs {
			if len(args) > 0 && args[0] == p {
				start, end := call.Pos().Offset(), call.End().Offset()
				cmds = append(cmds, Command{Source: fmt.Sprintf("%s:%d", source, call.Pos().Line()), Text: text[start:end], Args: args})
			}
		}
		return true
	})
	return cmds, walkErr
}

var (
	fence      = regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```")
	inlineCode = regexp.MustCompile("`([^`]+)`")
)

// MarkdownCommands are the commands of programs in a Markdown text: those of its shell code
// blocks (sh, bash, shell: parsed as one script, so that continuations and loops hold), the
// prompted lines (`$ ...`) of its other code blocks, and every inline code span that starts with
// one of the programs.
func MarkdownCommands(source, text string, programs ...string) ([]Command, error) {
	var cmds []Command
	for _, m := range fence.FindAllStringSubmatchIndex(text, -1) {
		line := strings.Count(text[:m[4]], "\n") + 1
		lang, block := text[m[2]:m[3]], text[m[4]:m[5]]
		if lang != "sh" && lang != "bash" && lang != "shell" {
			block = promptedLines(block)
		}
		found, err := ShellCommands(fmt.Sprintf("%s:%d", source, line), block, programs...)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, found...)
	}
	outside := fence.ReplaceAllStringFunc(text, func(block string) string { return strings.Repeat("\n", strings.Count(block, "\n")) })
	for _, m := range inlineCode.FindAllStringSubmatchIndex(outside, -1) {
		// A span may wrap across lines of the Markdown source.
		span := strings.Join(strings.Fields(outside[m[2]:m[3]]), " ")
		if !startsWithProgram(span, programs) {
			continue
		}
		line := strings.Count(outside[:m[2]], "\n") + 1
		found, err := ShellCommands(fmt.Sprintf("%s:%d", source, line), span, programs...)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, found...)
	}
	return cmds, nil
}

// promptedLines keeps the commands of a transcript, the lines after a `$ ` prompt, and blanks the
// rest (keeping line numbers).
func promptedLines(block string) string {
	lines := strings.Split(block, "\n")
	for i, l := range lines {
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(l), "$ "); ok {
			lines[i] = cmd
		} else {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

func startsWithProgram(s string, programs []string) bool {
	for _, p := range programs {
		if strings.HasPrefix(s, p+" ") || strings.Contains(s, "$("+p+" ") {
			return true
		}
	}
	return false
}
