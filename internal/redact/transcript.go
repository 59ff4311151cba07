package redact

import (
	"slices"

	"github.com/polygraph/polygraph/internal/transcript"
)

// ToolCall returns c with the secrets of its command, argv, URLs and
// result masked: c itself when nothing changed, else a copy, so the
// transcript read keeps what the agent wrote. A command the agent ran
// with a token in it (curl -H "Authorization: Bearer …") is in the
// transcript as in the kernel's record.
func ToolCall(c *transcript.ToolCall) *transcript.ToolCall {
	if c == nil {
		return nil
	}
	cmd, argv, urls, res := String(c.Command), Argv(c.Argv), each(c.URLs), String(c.Result)
	if cmd == c.Command && slices.Equal(argv, c.Argv) && slices.Equal(urls, c.URLs) && res == c.Result {
		return c
	}
	cc := *c
	cc.Command, cc.Argv, cc.URLs, cc.Result = cmd, argv, urls, res
	return &cc
}

// Claim returns c with the secrets of its text and subject masked: c
// itself when nothing changed, else a copy.
func Claim(c *transcript.Claim) *transcript.Claim {
	if c == nil {
		return nil
	}
	text, subject := String(c.Text), String(c.Subject)
	if text == c.Text && subject == c.Subject {
		return c
	}
	cc := *c
	cc.Text, cc.Subject = text, subject
	return &cc
}

// each masks each string of ss: ss itself when nothing changed.
func each(ss []string) []string {
	var out []string
	for i, s := range ss {
		if r := String(s); r != s {
			if out == nil {
				out = slices.Clone(ss)
			}
			out[i] = r
		}
	}
	if out == nil {
		return ss
	}
	return out
}
