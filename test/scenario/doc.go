// Package scenario runs what a shipped stack's pods run, in the order the cluster runs them, on
// one temporary directory standing for the shared volume: the data preparation, the submitter,
// the run and its resume. Each step is the rendered script of the stack (from infra.Resolve),
// run with the real bash and git; the tools that would reach the network or a GPU are stand-ins
// on PATH that replay recorded output (testdata/recorded) or stand for a download.
package scenario
