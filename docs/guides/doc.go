// Package guides holds nap's task guides (the Markdown files beside this one) and, in
// its test, their rule: a guide is for a user's task, so it carries no date and no test
// name, and every link it has leads to a file; the figures it quotes link to the lab's
// rows, which keep their dates.
package guides
